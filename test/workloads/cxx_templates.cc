// SPDX-License-Identifier: Apache-2.0
/*
 * C++ -O2 as people write it: templates, lambdas, std::sort with a
 * comparator, a class hierarchy with virtual calls, in namespaces, so that
 * every hot frame has a mangled name.
 * Usage: cxx_templates SECONDS
 */
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

namespace workload {

template <typename T, int Rounds> struct Mixer {
	__attribute__((noinline)) T mix(T x) const
	{
		for (int i = 0; i < Rounds; i++)
			x = x * T(6364136223846793005ULL) + T(1442695040888963407ULL);
		return x;
	}
};

class Shape {
      public:
	virtual ~Shape() = default;
	virtual uint64_t area(uint64_t seed) const = 0;
};

class Square : public Shape {
      public:
	__attribute__((noinline)) uint64_t area(uint64_t seed) const override
	{
		return Mixer<uint64_t, 20000>().mix(seed);
	}
};

template <typename Container, typename Compare>
__attribute__((noinline)) void sort_all(Container &c, Compare cmp)
{
	std::sort(c.begin(), c.end(), cmp);
}

__attribute__((noinline)) uint64_t run_round(uint64_t seed)
{
	std::vector<uint32_t> v(4096);
	uint32_t x = (uint32_t)seed;

	for (auto &e : v)
		e = x = x * 1103515245u + 12345u;
	sort_all(v, [](uint32_t a, uint32_t b) { return (a ^ 0x5555) < (b ^ 0x5555); });
	std::unique_ptr<Shape> s = std::make_unique<Square>();
	std::function<uint64_t(uint64_t)> f = [&](uint64_t y) { return s->area(y); };
	return f(seed ^ v[17]);
}

} // namespace workload

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	auto end = std::chrono::steady_clock::now() +
		   std::chrono::duration<double>(seconds);
	uint64_t sink = 1, rounds = 0;

	while (std::chrono::steady_clock::now() < end) {
		sink = workload::run_round(sink);
		rounds++;
	}
	printf("rounds %llu sink %llu\n", (unsigned long long)rounds,
	       (unsigned long long)sink);
	return 0;
}
