// SPDX-License-Identifier: Apache-2.0
/* The report's annualized core-hours, energy, CO2 and cost against sums
 * done by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "report_cost.h"

static void one_busy_core_is_a_year_of_core_hours(void **state)
{
	/* 100 Hz for 10 s on one busy core: 1000 samples = one core all the
	 * time = 365.25 * 24 core-hours a year */
	double k = report_core_hours_per_sample(10000000, 10000000000ull);

	(void)state;
	assert_float_equal(k * 1000, 365.25 * 24, 1e-9);
	/* half the samples in a recording twice as long: a quarter core */
	k = report_core_hours_per_sample(10000000, 20000000000ull);
	assert_float_equal(k * 500, 365.25 * 24 / 4, 1e-9);
	/* nothing to annualize */
	assert_float_equal(report_core_hours_per_sample(0, 10), 0, 0);
	assert_float_equal(report_core_hours_per_sample(-5, 10), 0, 0);
	assert_float_equal(report_core_hours_per_sample(10000000, 0), 0, 0);
}

static void energy_co2_and_cost(void **state)
{
	struct report_coeffs c = {.watts_per_core = 10,
				  .pue = 1.5,
				  .co2_kg_per_kwh = 0.5,
				  .cost_per_core_hour = 0.04};
	struct report_cost out;

	(void)state;
	/* 10 W * 1.5 = 15 W a core: 0.015 kWh and 0.0075 kg a core-hour */
	assert_float_equal(report_kwh_per_core_hour(&c), 0.015, 1e-12);
	assert_float_equal(report_co2_kg_per_core_hour(&c), 0.0075, 1e-12);
	/* 1000 samples of 8.766 core-hours each */
	report_cost_of(&c, 8.766, 1000, &out);
	assert_float_equal(out.core_hours, 8766, 1e-9);
	assert_float_equal(out.kwh, 131.49, 1e-9);
	assert_float_equal(out.co2_kg, 65.745, 1e-9);
	assert_float_equal(out.cost, 350.64, 1e-9);
}

static void defaults(void **state)
{
	struct report_coeffs c = {REPORT_DEFAULT_WATTS_PER_CORE,
				  REPORT_DEFAULT_PUE,
				  REPORT_DEFAULT_CO2_KG_PER_KWH,
				  REPORT_DEFAULT_COST_PER_CORE_HOUR};
	struct report_cost out;

	(void)state;
	/* one core for a year under the documented defaults (docs/report.md):
	 * 8766 h * 7 W * 1.7 = 104.3 kWh, 39.5 kg CO2, $372.6 */
	report_cost_of(&c, 365.25 * 24, 1, &out);
	assert_float_equal(out.kwh, 8766 * 0.007 * 1.7, 1e-9);
	assert_float_equal(out.co2_kg, 8766 * 0.007 * 1.7 * 0.379069, 1e-9);
	assert_float_equal(out.cost, 8766 * 0.0425, 1e-9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_busy_core_is_a_year_of_core_hours),
		cmocka_unit_test(energy_co2_and_cost),
		cmocka_unit_test(defaults),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
