/*
 * settings_row.h
 *		The row a maintenance settings function returns
 *		(parca.partition_settings(), parca.rollup_settings()).
 */
#ifndef PARCA_SETTINGS_ROW_H
#define PARCA_SETTINGS_ROW_H

#include "postgres.h"

#include "fmgr.h"

/* values, none NULL, as the function's OUT parameters. */
extern Datum settings_row(FunctionCallInfo fcinfo, const Datum *values);

#endif							/* PARCA_SETTINGS_ROW_H */
