/* rng.c - counter-based random numbers (see rng.h). */
#include "rng.h"

#include <math.h>

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t rng_hash(uint64_t seed, uint64_t stream, uint64_t index)
{
	uint64_t h = mix64(seed + 0x9e3779b97f4a7c15ULL);
	h = mix64(h ^ (stream * 0xd1b54a32d192ed03ULL));
	return mix64(h ^ (index + 0x632be59bd9b4e019ULL));
}

double rng_uniform(uint64_t seed, uint64_t stream, uint64_t index)
{
	return (double)(rng_hash(seed, stream, index) >> 11) * 0x1.0p-53;
}

double rng_normal(uint64_t seed, uint64_t stream, uint64_t index)
{
	double u1 = rng_uniform(seed, stream, 2 * index);
	double u2 = rng_uniform(seed, stream, 2 * index + 1);
	if (u1 <= 0)
		u1 = 0x1.0p-53;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

int rng_length(uint64_t seed, uint64_t stream, uint64_t index, double mean, double stddev, int lo,
	       int hi)
{
	double x = mean;
	if (stddev > 0)
		x += stddev * rng_normal(seed, stream, index);
	x = round(x);
	if (x < lo)
		x = lo;
	if (x > hi)
		x = hi;
	return (int)x;
}
