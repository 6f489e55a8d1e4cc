// SPDX-License-Identifier: Apache-2.0
#include "report_cost.h"

#define SECONDS_PER_YEAR (365.25 * 24 * 3600)

double report_core_hours_per_sample(int64_t period_ns, uint64_t recording_ns)
{
	if (period_ns <= 0 || !recording_ns)
		return 0;
	/* core-seconds of one sample, times the recordings in a year,
	 * in hours */
	return (double)period_ns / 1e9 *
	       (SECONDS_PER_YEAR / ((double)recording_ns / 1e9)) / 3600.0;
}

double report_kwh_per_core_hour(const struct report_coeffs *c)
{
	return c->watts_per_core / 1000.0 * c->pue;
}

double report_co2_kg_per_core_hour(const struct report_coeffs *c)
{
	return report_kwh_per_core_hour(c) * c->co2_kg_per_kwh;
}

void report_cost_of(const struct report_coeffs *c, double core_hours_per_sample,
		    double samples, struct report_cost *out)
{
	out->core_hours = samples * core_hours_per_sample;
	out->kwh = out->core_hours * report_kwh_per_core_hour(c);
	out->co2_kg = out->core_hours * report_co2_kg_per_core_hour(c);
	out->cost = out->core_hours * c->cost_per_core_hour;
}
