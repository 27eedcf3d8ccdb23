/*
 * Relay context ids of new communicators (gc_context.c).
 */
#ifndef GC_CONTEXT_H
#define GC_CONTEXT_H

#include <stdint.h>

/*
 * Relay context id of a communicator being made (gc_context.c): rounds
 * over the parent, each member proposing gc_ctx_propose's id (0: it yields
 * this round to another creation of its process); with every member's
 * proposal gathered, gc_ctx_decide returns the agreed id, or 0 when a
 * member yielded and another round is needed.  The claim's priority is
 * the parent's context, then `tag`: creations that may run at once on one
 * parent (MPI_Comm_create_group) differ in their tag, the others pass 0.
 * The claim lives from gc_ctx_claim_begin to gc_ctx_claim_end.
 * Agreed ids stay below GC_CTX_DERIVED (gc_ctx_decide returns 0 and
 * *exhausted is set when they ran out).
 */
struct gc_ctx_claim {
    uint64_t priority;
    unsigned rounds; /* rounds decided so far */
    struct gc_ctx_claim *next;
};
void gc_ctx_claim_begin(struct gc_ctx_claim *claim, uint32_t parent_context,
                        int tag);
static inline uint64_t gc_ctx_priority(uint32_t parent_context, int tag)
{
    return (uint64_t)parent_context << 32 | (uint32_t)tag;
}
uint32_t gc_ctx_propose(struct gc_ctx_claim *claim);
uint32_t gc_ctx_decide(struct gc_ctx_claim *claim, uint32_t largest,
                       int any_yielded, int *exhausted);
void gc_ctx_claim_end(struct gc_ctx_claim *claim);
/*
 * The context of the n-th MPI_Comm_idup of a communicator on block
 * `parent`: every member starts a communicator's collectives in the same
 * order, so all derive the same id without exchanging anything, as a
 * nonblocking call must.  A hash into the ids from GC_CTX_DERIVED: two
 * communicators of one process collide with probability about 1 in 4e8,
 * which gc_comm_context_taken detects.
 */
uint32_t gc_context_derived(uint32_t parent, uint32_t n);

#endif
