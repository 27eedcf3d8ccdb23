/*
 * Relay context ids of new grid communicators (gc_context.h), agreed in
 * rounds over the parent communicator that stay correct when the
 * program's threads make communicators at once (MPI_THREAD_MULTIPLE;
 * MPI 4.1 section 11.6.3 allows it, from different parents, or from one
 * parent with MPI_Comm_create_group and different tags).
 *
 * Each process keeps the next id it may use; ids only grow, so no two
 * communicators of one process share one (disjoint communicators made by
 * one split may share theirs: nobody belongs to both).  A round: every
 * member proposes its next id, the proposals are gathered, and when all
 * proposed, the largest is the new communicator's and every member moves
 * past it.
 *
 * Concurrency: two creations in one process must not both propose the
 * same next id, so one creation at a time per process holds the right to
 * propose, for one round; the others yield (propose 0), which makes that
 * round fail for all members, and try again.  There are two such rights,
 * each over ids of its own, as in MPICH's context-id allocation
 * (src/mpi/comm/contextid.c: the eager mask and the main mask):
 *  - first rounds: the first creation to ask.  Without threads a round
 *    never fails, so every creation takes one round, as before.  But the
 *    holder may wait long: its round ends only when every member has
 *    entered the creation, and a member may first be busy in another
 *    creation that this process, yielding, holds up.
 *  - later rounds: the creation lowest in an order every process agrees
 *    on (the parent's context id, then the tag), among those past their
 *    first round.  Those have all their members in the rounds, so a
 *    holder's round ends soon and the lowest creation everywhere wins a
 *    round once its members' current rounds end: no deadlock, no
 *    livelock.
 *
 * MPI_Comm_idup cannot agree (a nonblocking call must not wait for the
 * other members): its ids are derived from the parent's instead
 * (gc_context_derived), in a range of their own above GC_CTX_DERIVED.
 */
#include "comm/gc_context.h"
#include "core/gc_comm.h"

/* Where the ids of later rounds begin. */
#define CTX_ORDERED (GC_CTX_DERIVED / 2 / GC_CTX_STRIDE * GC_CTX_STRIDE)

/* Block 0 is MPI_COMM_WORLD's, block 1 the layer's own grid
 * communicator (gc_runtime.c). */
static uint32_t next_first = 2 * GC_CTX_STRIDE;
static uint32_t next_ordered = CTX_ORDERED;
/* Creations in progress, oldest first, and the holders of the rights. */
static struct gc_ctx_claim *claims;
static struct gc_ctx_claim *proposing_first;
static struct gc_ctx_claim *proposing_ordered;

void gc_ctx_claim_begin(struct gc_ctx_claim *claim, uint32_t parent_context,
                        int tag)
{
    struct gc_ctx_claim **at = &claims;
    while (*at != NULL)
        at = &(*at)->next;
    *claim =
        (struct gc_ctx_claim){.priority = gc_ctx_priority(parent_context, tag)};
    *at = claim;
}

uint32_t gc_ctx_propose(struct gc_ctx_claim *claim)
{
    if (claim->rounds == 0) {
        if (proposing_first != NULL || next_first >= CTX_ORDERED)
            return 0;
        proposing_first = claim;
        return next_first;
    }
    if (proposing_ordered != NULL)
        return 0;
    for (const struct gc_ctx_claim *c = claims; c != NULL; c = c->next)
        if (c->rounds > 0 && c->priority < claim->priority)
            return 0;
    proposing_ordered = claim;
    return next_ordered;
}

static void release(const struct gc_ctx_claim *claim)
{
    if (proposing_first == claim)
        proposing_first = NULL;
    if (proposing_ordered == claim)
        proposing_ordered = NULL;
}

uint32_t gc_ctx_decide(struct gc_ctx_claim *claim, uint32_t largest,
                       int any_yielded, int *exhausted)
{
    int first = claim->rounds++ == 0;
    release(claim);
    *exhausted =
        !first && !any_yielded && largest > GC_CTX_DERIVED - GC_CTX_STRIDE;
    if (any_yielded || *exhausted)
        return 0;
    /* Every member proposed its own next id of the round's kind, and
     * nothing else in this process moved it meanwhile. */
    if (first)
        next_first = largest + GC_CTX_STRIDE;
    else
        next_ordered = largest + GC_CTX_STRIDE;
    return largest;
}

void gc_ctx_claim_end(struct gc_ctx_claim *claim)
{
    release(claim);
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
