/*
 * columnar_directory.c
 *		The directory of a stripe (columnar_internal.h): its row number
 *		ranges, columns and chunks, as stored in parca.columnar_stripes,
 *		built from a stripe and parsed back into one, checked.
 *
 * The directory of a stripe, stored in its parca.columnar_stripes row, is
 * a ColumnarDirectoryHeader followed by the arrays of the stripe's row
 * number ranges, columns (ColumnarColumn) and chunks (ColumnarChunk,
 * column-major), as columnar_internal.h declares them; then, when the
 * header's flags have COLUMNAR_STRIPE_DICT_IDS (format version 3), one
 * ColumnarChunk per column: where the ids of its dictionary's entries are.
 *
 * What changes here changes the format: see COLUMNAR_FORMAT_VERSION.
 */
#include "postgres.h"

#include "columnar/columnar_internal.h"

/* The directory of stripe s: its row number ranges, columns and chunks. */
bytea *
columnar_directory_build(const ColumnarStripe *s)
{
	ColumnarDirectoryHeader hdr;
	StringInfoData dir;

	memset(&hdr, 0, sizeof(hdr));
	hdr.magic = COLUMNAR_DIRECTORY_MAGIC;
	hdr.natts = s->natts;
	hdr.ngroups = s->ngroups;
	hdr.group_rows = s->group_rows;
	hdr.nranges = s->nranges;
	hdr.flags = s->flags & ~COLUMNAR_STRIPE_DICT_IDS;
	if (s->dict_ids)
		hdr.flags |= COLUMNAR_STRIPE_DICT_IDS;
	hdr.nrows = s->row_count;
	initStringInfo(&dir);
	appendStringInfoSpaces(&dir, VARHDRSZ);
	appendBinaryStringInfo(&dir, (char *) &hdr, sizeof(hdr));
	appendBinaryStringInfo(&dir, (char *) s->ranges, sizeof(ColumnarRowRange) * s->nranges);
	appendBinaryStringInfo(&dir, (char *) s->columns, sizeof(ColumnarColumn) * s->natts);
	appendBinaryStringInfo(&dir, (char *) s->chunks,
						   sizeof(ColumnarChunk) * s->natts * s->ngroups);
	if (s->dict_ids)
		appendBinaryStringInfo(&dir, (char *) s->dict_ids, sizeof(ColumnarChunk) * s->natts);
	SET_VARSIZE(dir.data, dir.len);
	return (bytea *) dir.data;
}

/*
 * A stripe from its parca.columnar_stripes row: the directory (and the
 * data of an inline stripe) parsed into one palloc'd ColumnarStripe.
 */
ColumnarStripe *
columnar_directory_parse(int64 first_row, int64 row_count, int64 first_block,
						 int64 data_size, bytea *directory, bytea *inline_data)
{
	ColumnarDirectoryHeader hdr;
	const char *p = VARDATA_ANY(directory);
	Size		len = VARSIZE_ANY_EXHDR(directory);
	Size		need;
	ColumnarStripe *s;
	char	   *body;

	if (len < sizeof(hdr))
		goto bad;
	memcpy(&hdr, p, sizeof(hdr));
	if (hdr.magic != COLUMNAR_DIRECTORY_MAGIC || hdr.natts < 0 || hdr.ngroups < 0 ||
		hdr.nranges < 0 || hdr.nrows != row_count)
		goto bad;
	need = sizeof(hdr) + hdr.nranges * sizeof(ColumnarRowRange) +
		hdr.natts * sizeof(ColumnarColumn) +
		(Size) hdr.natts * hdr.ngroups * sizeof(ColumnarChunk);
	if (hdr.flags & COLUMNAR_STRIPE_DICT_IDS)
		need += hdr.natts * sizeof(ColumnarChunk);
	if (len != need)
		goto bad;
	if (inline_data && VARSIZE_ANY_EXHDR(inline_data) != data_size)
		goto bad;

	s = palloc(MAXALIGN(sizeof(ColumnarStripe)) + MAXALIGN(len) +
			   (inline_data ? data_size : 0));
	body = (char *) s + MAXALIGN(sizeof(ColumnarStripe));
	memcpy(body, p, len);
	s->first_row = first_row;
	s->row_count = row_count;
	s->first_block = first_block;
	s->data_size = data_size;
	s->natts = hdr.natts;
	s->ngroups = hdr.ngroups;
	s->group_rows = hdr.group_rows;
	s->nranges = hdr.nranges;
	s->flags = hdr.flags & ~COLUMNAR_STRIPE_DICT_IDS;
	s->ranges = (ColumnarRowRange *) (body + sizeof(hdr));
	s->columns = (ColumnarColumn *) (s->ranges + hdr.nranges);
	s->chunks = (ColumnarChunk *) (s->columns + hdr.natts);
	s->dict_ids = (hdr.flags & COLUMNAR_STRIPE_DICT_IDS) ?
		s->chunks + (Size) hdr.natts * hdr.ngroups : NULL;
	s->inline_data = NULL;
	ItemPointerSetInvalid(&s->meta_tid);
	if (inline_data)
	{
		s->inline_data = body + MAXALIGN(len);
		memcpy(s->inline_data, VARDATA_ANY(inline_data), data_size);
	}
	return s;

bad:
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("columnar stripe at row " INT64_FORMAT " has a bad directory", first_row)));
	return NULL;
}
