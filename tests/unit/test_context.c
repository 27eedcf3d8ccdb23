/*
 * Relay context ids under concurrency (libgridcoll/comm/gc_context.c), one
 * process's side of the rounds: what each creation proposes, and where
 * the agreed ids move the next ones.  The rounds' outcomes, which the
 * other members would contribute to, are given by hand.
 *   - alone, a creation takes its first round's id, and the next one a
 *     larger id;
 *   - a second creation's first round yields while the first holds the
 *     first right, and its later rounds do not wait for a creation still
 *     in its first round (which may be waiting for members busy in this
 *     one: the livelock of MPICH's comm_create_group_threads2);
 *   - later rounds go to the lowest (parent context, tag) among the
 *     creations past their first round; the two kinds of ids never meet.
 */
#define UNIT_CHECK_EXPR
#include "unit_check.h"

#include "comm/gc_context.h"
#include "core/gc_comm.h"

/* One round whose other members all proposed `others` (0: one yielded). */
static uint32_t round_with(struct gc_ctx_claim *claim, uint32_t mine,
                           uint32_t others)
{
    int exhausted = 0;
    uint32_t largest = mine > others ? mine : others;
    uint32_t got =
        gc_ctx_decide(claim, largest, mine == 0 || others == 0, &exhausted);
    CHECK(!exhausted);
    return got;
}

static void alone(void)
{
    struct gc_ctx_claim a, b;
    gc_ctx_claim_begin(&a, 0, 0);
    uint32_t first = gc_ctx_propose(&a);
    CHECK(first == 2 * GC_CTX_STRIDE);
    CHECK(round_with(&a, first, first) == first);
    gc_ctx_claim_end(&a);

    /* Another member was further on: its id is taken, and passed. */
    gc_ctx_claim_begin(&b, 0, 0);
    uint32_t next = gc_ctx_propose(&b);
    CHECK(next == first + GC_CTX_STRIDE);
    CHECK(round_with(&b, next, next + 7 * GC_CTX_STRIDE) ==
          next + 7 * GC_CTX_STRIDE);
    gc_ctx_claim_end(&b);
    gc_ctx_claim_begin(&a, 0, 0);
    CHECK(gc_ctx_propose(&a) == next + 8 * GC_CTX_STRIDE);
    gc_ctx_claim_end(&a);
}

static void first_round_holder_blocks_nobody(void)
{
    /* g1 (tag 1) holds the first right, waiting for members that are
     * busy elsewhere; g0 (tag 0, lower) arrives. */
    struct gc_ctx_claim g1, g0;
    gc_ctx_claim_begin(&g1, 40, 1);
    uint32_t held = gc_ctx_propose(&g1);
    CHECK(held != 0 && held < GC_CTX_DERIVED / 2);
    gc_ctx_claim_begin(&g0, 40, 0);
    CHECK(gc_ctx_propose(&g0) == 0);
    CHECK(round_with(&g0, 0, 5 * GC_CTX_STRIDE) == 0);
    /* Its second round proposes from the ordered ids, g1 still out. */
    uint32_t ordered = gc_ctx_propose(&g0);
    CHECK(ordered + GC_CTX_STRIDE > GC_CTX_DERIVED / 2 &&
          ordered < GC_CTX_DERIVED);
    CHECK(ordered % GC_CTX_STRIDE == 0);
    CHECK(round_with(&g0, ordered, ordered) == ordered);
    gc_ctx_claim_end(&g0);
    /* g1's round ends after all: its id is its own. */
    CHECK(round_with(&g1, held, held) == held);
    gc_ctx_claim_end(&g1);
}

static void ordered_rounds_by_priority(void)
{
    struct gc_ctx_claim high, low, other;
    gc_ctx_claim_begin(&high, 9, 3);
    gc_ctx_claim_begin(&low, 9, 2);
    gc_ctx_claim_begin(&other, 8, 7); /* lower parent: lowest of all */
    /* First rounds: one holder; all three fail (a member yielded). */
    uint32_t p = gc_ctx_propose(&high);
    CHECK(p != 0);
    CHECK(gc_ctx_propose(&low) == 0);
    CHECK(gc_ctx_propose(&other) == 0);
    CHECK(round_with(&high, p, 0) == 0);
    CHECK(round_with(&low, 0, 0) == 0);
    /* high and low are past their first round, other is not yet: low
     * goes first, high yields to it. */
    CHECK(gc_ctx_propose(&high) == 0);
    uint32_t q = gc_ctx_propose(&low);
    CHECK(q + GC_CTX_STRIDE > GC_CTX_DERIVED / 2);
    CHECK(round_with(&high, 0, 0) == 0);
    /* other's first round (first right free again) fails too; from now
     * on it is the lowest past its first round. */
    CHECK(round_with(&other, gc_ctx_propose(&other), 0) == 0);
    CHECK(round_with(&low, q, q) == q);
    gc_ctx_claim_end(&low);
    CHECK(gc_ctx_propose(&high) == 0);
    uint32_t r = gc_ctx_propose(&other);
    CHECK(r == q + GC_CTX_STRIDE);
    CHECK(round_with(&other, r, r) == r);
    gc_ctx_claim_end(&other);
    uint32_t s = gc_ctx_propose(&high);
    CHECK(s == r + GC_CTX_STRIDE);
    CHECK(round_with(&high, s, s) == s);
    gc_ctx_claim_end(&high);
}

static void exhaustion(void)
{
    struct gc_ctx_claim a;
    int exhausted = 0;
    gc_ctx_claim_begin(&a, 1, 0);
    uint32_t p = gc_ctx_propose(&a);
    CHECK(gc_ctx_decide(&a, p, 1, &exhausted) == 0 && !exhausted);
    p = gc_ctx_propose(&a);
    CHECK(gc_ctx_decide(&a, GC_CTX_DERIVED, 0, &exhausted) == 0);
    CHECK(exhausted);
    gc_ctx_claim_end(&a);
}

int main(void)
{
    alone();
    first_round_holder_blocks_nobody();
    ordered_rounds_by_priority();
    exhaustion();
    return unit_check_report("context: ");
}
