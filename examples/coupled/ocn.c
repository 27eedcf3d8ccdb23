/*
 * ocn: the ocean of the coupled example (docs/coupling.md).  Its sea
 * surface field goes to the atmosphere every step; the flux it gets back
 * warms its surface layer.
 *
 *   ocn [--steps N] [--points P]     (the same N and P as atm's)
 */
#include "coupler.h"

/* Heat capacity of the surface layer: flux per degree. */
#define CAPACITY 1e6

static void update(double *sst, const double *flux, long count)
{
    for (long i = 0; i < count; i++)
        sst[i] += flux[i] / CAPACITY;
}

int main(int argc, char **argv)
{
    return coupler_main(argc, argv, MODEL_OCN, update, 0.0);
}
