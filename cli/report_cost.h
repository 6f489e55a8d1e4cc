/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Annualized cost and CO2 of CPU samples, as profiling backends show them:
 * the CPU a function used during the recording, extrapolated to a year of
 * the same load, priced per core-hour and turned into energy (per-core
 * watts times the data centre's PUE) and emissions (grid kg CO2 per kWh).
 * Defaults (docs/report.md gives their sources): Elastic Universal
 * Profiling's, the ones its articles show.
 */
#ifndef OTELPROF_CLI_REPORT_COST_H
#define OTELPROF_CLI_REPORT_COST_H

#include <stdint.h>

#define REPORT_DEFAULT_WATTS_PER_CORE	  7.0
#define REPORT_DEFAULT_PUE		  1.7
#define REPORT_DEFAULT_CO2_KG_PER_KWH	  0.379069
#define REPORT_DEFAULT_COST_PER_CORE_HOUR 0.0425
#define REPORT_DEFAULT_PERIOD_NS	  (1000000000 / 19) /* the library's 19 Hz */

struct report_coeffs {
	double watts_per_core;
	double pue;
	double co2_kg_per_kwh;
	double cost_per_core_hour;
};

struct report_cost {
	double core_hours; /* per year */
	double kwh;	   /* per year */
	double co2_kg;	   /* per year */
	double cost;	   /* per year, in the currency of the coefficient */
};

/* Core-hours per year that one sample stands for: a sample is period_ns of
 * one core's time in a recording of recording_ns. 0 when either is not
 * positive (the page then shows no cost). */
double report_core_hours_per_sample(int64_t period_ns, uint64_t recording_ns);

/* What `samples` samples cost in a year. The page computes the same with
 * the factors the report embeds (core-hours per sample, kWh, kg and cost
 * per core-hour), so both agree. */
void report_cost_of(const struct report_coeffs *c, double core_hours_per_sample,
		    double samples, struct report_cost *out);

/* kWh, kg CO2 and cost of one core-hour. */
double report_kwh_per_core_hour(const struct report_coeffs *c);
double report_co2_kg_per_core_hour(const struct report_coeffs *c);

#endif
