/*
 * maintenance_internal.h
 *		Between the files of src/maintenance/: the row a settings function
 *		returns (parca.partition_settings(), parca.rollup_settings(),
 *		settings_row.c).
 */
#ifndef PARCA_MAINTENANCE_INTERNAL_H
#define PARCA_MAINTENANCE_INTERNAL_H

#include "postgres.h"

#include "fmgr.h"

/* values, none NULL, as the function's OUT parameters. */
extern Datum settings_row(FunctionCallInfo fcinfo, const Datum *values);

#endif							/* PARCA_MAINTENANCE_INTERNAL_H */
