/*
 * Relay context ids of new grid communicators (gc_mpi.h), agreed in
 * rounds over the parent communicator that stay correct when the
 * program's threads make communicators from different parents at once
 * (MPI_THREAD_MULTIPLE; MPI 4.1 section 11.6.3 allows it).
 *
 * Each process keeps the next id it may use; ids only grow, so no two
 * communicators of one process share one (disjoint communicators made by
 * one split may share theirs: nobody belongs to both).  A round: every
 * member proposes its next id, the proposals are gathered, and when all
 * proposed, the largest is the new communicator's and every member moves
 * past it.
 *
 * Concurrency: two creations in one process must not both propose the
 * same next id.  So one creation at a time per process holds the right to
 * propose, for one round; the others yield (propose 0), which makes that
 * round fail for their whole parent, and try again.  The right goes to
 * the waiting creation whose parent has the lowest context id, an order
 * every process agrees on, so the creation lowest in it everywhere wins a
 * round as soon as its members' current rounds end: no deadlock, no
 * livelock (MPICH's context-id allocation, src/mpi/comm/contextid.c,
 * settles the same race by the same priority).  Without threads a round
 * never fails: one round, as before.
 *
 * MPI_Comm_idup cannot agree (a nonblocking call must not wait for the
 * other members): its ids are derived from the parent's instead
 * (gc_context_derived), in a range of their own above GC_CTX_DERIVED.
 */
#include "gc_mpi.h"

/* Block 0 is MPI_COMM_WORLD's, block 1 the layer's own grid
 * communicator (gc_runtime.c). */
static uint32_t next_context = 2 * GC_CTX_STRIDE;
/* Creations in progress, oldest first, and the one proposing this round. */
static struct gc_ctx_claim *claims;
static struct gc_ctx_claim *proposing;

void gc_ctx_claim_begin(struct gc_ctx_claim *claim, uint32_t priority)
{
    struct gc_ctx_claim **at = &claims;
    while (*at != NULL)
        at = &(*at)->next;
    *claim = (struct gc_ctx_claim){.priority = priority};
    *at = claim;
}

uint32_t gc_ctx_propose(struct gc_ctx_claim *claim)
{
    if (proposing != NULL)
        return 0;
    for (const struct gc_ctx_claim *c = claims; c != NULL; c = c->next)
        if (c->priority < claim->priority)
            return 0;
    proposing = claim;
    return next_context;
}

uint32_t gc_ctx_decide(struct gc_ctx_claim *claim, uint32_t largest,
                       int any_yielded, int *exhausted)
{
    if (proposing == claim)
        proposing = NULL;
    *exhausted = !any_yielded && largest > GC_CTX_DERIVED - GC_CTX_STRIDE;
    if (any_yielded || *exhausted)
        return 0;
    /* Every member proposed its own next id, and nothing else in this
     * process moved it meanwhile: largest >= next_context. */
    next_context = largest + GC_CTX_STRIDE;
    return largest;
}

void gc_ctx_claim_end(struct gc_ctx_claim *claim)
{
    if (proposing == claim)
        proposing = NULL;
    for (struct gc_ctx_claim **at = &claims; *at != NULL; at = &(*at)->next)
        if (*at == claim) {
            *at = claim->next;
            break;
        }
}

uint32_t gc_context_derived(uint32_t parent, uint32_t n)
{
    /* SplitMix64's finalizer (Steele et al., "Fast splittable
     * pseudorandom number generators", OOPSLA 2014): every input bit
     * moves every output bit. */
    uint64_t x = ((uint64_t)parent << 32 | n) + 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    x ^= x >> 31;
    uint32_t blocks = (GC_CTX_LIBRARY - GC_CTX_DERIVED) / GC_CTX_STRIDE;
    return GC_CTX_DERIVED + (uint32_t)(x % blocks) * GC_CTX_STRIDE;
}
