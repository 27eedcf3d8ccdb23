/*
 * atm: the atmosphere of the coupled example (docs/coupling.md).  Its
 * boundary field goes to the ocean every step; the sea surface
 * temperature it gets back relaxes its air temperature.
 *
 *   atm [--steps N] [--points P]     (the same N and P as ocn's)
 */
#include "coupler.h"

/* Relaxation of the air towards the sea surface per step. */
#define RELAXATION 0.1

static void update(double *air, const double *sst, long count)
{
    for (long i = 0; i < count; i++)
        air[i] += RELAXATION * (sst[i] - air[i]);
}

int main(int argc, char **argv)
{
    return coupler_main(argc, argv, MODEL_ATM, update, 0.0);
}
