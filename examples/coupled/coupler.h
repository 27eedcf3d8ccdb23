/*
 * The coupling layer of the coupled example (docs/coupling.md): two MPI
 * programs started as one job, an atmosphere and an ocean, each finding
 * its own ranks by MPI_APPNUM and reaching the other's through an
 * intercommunicator.  Only standard MPI is used: the programs run the
 * same under plain mpiexec (`mpiexec -n 2 ./atm : -n 2 ./ocn`) and under
 * gridrun across sites.
 *
 * The boundary between the two models is a line of `points` grid points
 * that both decompose into blocks over their own ranks (block_of).  Every
 * step each rank sends the part of its block that overlaps a remote
 * rank's block to that rank, and receives the remote field on the same
 * overlap, with point-to-point on the intercommunicator: the remapping a
 * coupler does, between decompositions of any two sizes.
 */
#ifndef COUPLER_H
#define COUPLER_H

#include <mpi.h>
#include <stdint.h>

/* The two programs, by the role each plays (not by application number:
 * either may be started first). */
enum model { MODEL_ATM, MODEL_OCN, MODEL_COUNT };

struct coupler {
    enum model model;
    MPI_Comm local; /* this program's ranks (MPI_COMM_WORLD split by
                       MPI_APPNUM) */
    MPI_Comm inter; /* to the other program's ranks */
    int appnum;     /* this program's MPI_APPNUM */
    int rank, size; /* in `local` */
    int remote_size;
    long points; /* boundary grid points */
    long first;  /* this rank's block of them: [first, first + count) */
    long count;
    MPI_Request *req; /* two per remote rank, for coupler_exchange */
    MPI_Status *statuses;
};

/*
 * Split MPI_COMM_WORLD by MPI_APPNUM and build the intercommunicator
 * between the two programs; the leaders check that both run with the
 * same `points` and `steps`.  0, or -1 after a message on stderr (not two
 * programs, no MPI_APPNUM, the programs disagree).
 */
int coupler_init(struct coupler *c, enum model model, long points, long steps);

/*
 * The boundary field `model` sends at `step` on point `g`: synthetic,
 * so that every receiver knows, bit for bit, what must arrive.  Values
 * are integers below 2^53 divided by 4, exact in a double, different for
 * every model, step and point (a field sent to the wrong rank, at the
 * wrong step or by the wrong model cannot pass the check).
 */
double coupler_field(enum model model, long step, long g);

/*
 * One step's exchange: `send` holds this rank's block of its own field,
 * `recv` receives the other model's field on the same block.  Returns an
 * MPI error code.
 */
int coupler_exchange(struct coupler *c, long step, const double *send,
                     double *recv);

void coupler_finalize(struct coupler *c);

/*
 * This rank's model state on its block, advanced by the field the other
 * model sent (the received boundary field, `count` points).
 */
typedef void model_update(double *state, const double *received, long count);

/*
 * The main of both programs: parse `--steps N --points P`, then every
 * step send this model's boundary field, receive the other's, check
 * every received value against coupler_field byte for byte and advance
 * the state; rank 0 of each program prints a summary.  Returns the
 * process's exit status.
 */
int coupler_main(int argc, char **argv, enum model model, model_update *update,
                 double initial);

#endif
