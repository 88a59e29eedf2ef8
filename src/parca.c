/*
 * parca.c
 *		Entry point of the parca extension: module magic and start-up.
 *
 * Each part of the extension that needs start-up work (settings, shared
 * memory) owns it and has an init function called from here, one per
 * module; the background workers are started by the launcher that
 * workers_init() registers.  Nothing includes this file's module: the
 * layers below it hold what they share (docs/development.md, "Layers").
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "columnar/columnar.h"
#include "ingest/ingest.h"
#include "maintenance/partitions.h"
#include "maintenance/rollups.h"
#include "metastore/series_index.h"
#include "scrape/scrape.h"
#include "symbolize/symbolize.h"
#include "workers/workers.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	ingest_init();
	columnar_init();
	series_index_init();
	scrape_init();
	symbolize_init();
	partitions_init();
	rollups_init();
	workers_init();
	MarkGUCPrefixReserved("parca");
}
