/*
 * parca.h
 *		Settings and module-wide declarations of the parca extension.
 */
#ifndef PARCA_H
#define PARCA_H

#include "fmgr.h"

/* parca.max_profile_size: largest accepted profile, decompressed, in bytes. */
extern int	parca_max_profile_size;

/* The schema of extension parca (palloc'd), or NULL if it is not installed. */
extern char *parca_extension_schema(void);

/*
 * The row a settings function returns (parca.partition_settings(), ...):
 * values, none NULL, as the function's OUT parameters.
 */
extern Datum parca_settings_row(FunctionCallInfo fcinfo, const Datum *values);

#endif							/* PARCA_H */
