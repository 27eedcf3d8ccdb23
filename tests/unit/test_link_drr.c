/*
 * Unit test of the link's scheduler (relay/link_drr.c): deficit round
 * robin between the jobs on a link, with a fake link that lets chunks go
 * while a byte budget lasts.  Checked: the exact order of the chunks,
 * the bytes each job gets, jobs with nothing queued left out, chunks
 * larger than a quantum waiting for the deficit of several turns, a job
 * that could not send keeping its place and its deficit, and the shares
 * of jobs with very different chunk sizes over many rounds.
 */
#include "relay.h"

#include "unit_check.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define QUANTUM   1000u
#define UNLIMITED INT64_MAX
#define JOBS      4

/*
 * The link as the scheduler sees it: bytes it may still take, either like
 * the link window (a chunk goes only if it fits) or like the streams'
 * room (one goes whenever there is any left, however large it is, and
 * what it takes beyond is owed).
 */
enum budget_kind { WINDOW, ROOM };
struct fake_link {
    struct drr drr;
    struct drr_queue jobs[JOBS];
    enum budget_kind kind;
    int64_t budget;        /* UNLIMITED: never runs out */
    char order[512];       /* "A1 B1 ...": job letter, chunk number */
    uint64_t bytes[JOBS];  /* chunk_cost sent per job */
    uint64_t chunks_alive; /* made and not yet sent or dropped */
};

static struct fake_link link_;

static void reset(enum budget_kind kind, int64_t budget)
{
    memset(&link_, 0, sizeof link_);
    drr_init(&link_.drr);
    for (int j = 0; j < JOBS; j++)
        drr_queue_init(&link_.jobs[j]);
    link_.kind = kind;
    link_.budget = budget;
}

/* Queue chunks number first..last of `job`, each costing `cost` bytes
 * (header included). */
static void push(int job, unsigned first, unsigned last, uint64_t cost)
{
    for (unsigned n = first; n <= last; n++) {
        struct gc_frame_header h = {
            .type = GC_FRAME_DATA,
            .context_id = (uint32_t)job,
            .msg_seq = n,
            .payload_len = (uint32_t)(cost - GC_HEADER_SIZE),
        };
        struct chunk *c = chunk_new(NULL, NULL, &h);
        if (c == NULL) {
            CHECKF(0, "out of memory");
            return;
        }
        link_.chunks_alive++;
        drr_push(&link_.drr, &link_.jobs[job], c);
    }
}

static int may_send(void *arg, const struct chunk *c)
{
    const struct fake_link *l = arg;
    return l->kind == WINDOW ? l->budget >= (int64_t)chunk_cost(c)
                             : l->budget > 0;
}

static void send_chunk(void *arg, struct chunk *c)
{
    struct fake_link *l = arg;
    if (l->budget != UNLIMITED)
        l->budget -= (int64_t)chunk_cost(c);
    l->bytes[c->hdr.context_id] += chunk_cost(c);
    size_t used = strlen(l->order);
    snprintf(l->order + used, sizeof l->order - used, "%s%c%llu",
             used > 0 ? " " : "", 'A' + (int)c->hdr.context_id,
             (unsigned long long)c->hdr.msg_seq);
    l->chunks_alive--;
    chunk_unref(c);
}

/* Serve once; the order of what went, from an empty record. */
static const char *serve(int *moved)
{
    link_.order[0] = '\0';
    *moved = drr_serve(&link_.drr, QUANTUM, may_send, send_chunk, &link_);
    return link_.order;
}

static void expect_order(int line, const char *want)
{
    int moved;
    const char *got = serve(&moved);
    CHECK_AT(strcmp(got, want) == 0, line, "order '%s', expected '%s'", got,
             want);
    CHECK_AT(moved == (want[0] != '\0'), line, "drr_serve returned %d for '%s'",
             moved, got);
}

/* Jobs A and B got `bytes` each. */
static void expect_shares(int line, uint64_t bytes)
{
    CHECK_AT(link_.bytes[0] == bytes && link_.bytes[1] == bytes, line,
             "A %llu, B %llu bytes, expected %llu each",
             (unsigned long long)link_.bytes[0],
             (unsigned long long)link_.bytes[1], (unsigned long long)bytes);
}

static void expect_drained(int line)
{
    CHECK_AT(TAILQ_EMPTY(&link_.drr.active) && link_.drr.bytes == 0 &&
                 link_.chunks_alive == 0,
             line, "left: %llu bytes, %llu chunks",
             (unsigned long long)link_.drr.bytes,
             (unsigned long long)link_.chunks_alive);
    for (int j = 0; j < JOBS; j++)
        CHECK_AT(!link_.jobs[j].active && link_.jobs[j].bytes == 0 &&
                     link_.jobs[j].deficit == 0,
                 line, "job %c: active %d, %llu bytes, deficit %llu", 'A' + j,
                 link_.jobs[j].active, (unsigned long long)link_.jobs[j].bytes,
                 (unsigned long long)link_.jobs[j].deficit);
}

/* Chunks of one quantum: one chunk per job per turn, in turn order. */
static void equal_chunks_take_turns(void)
{
    reset(WINDOW, UNLIMITED);
    expect_order(__LINE__, "");
    push(0, 1, 3, QUANTUM);
    push(1, 1, 3, QUANTUM);
    push(2, 1, 3, QUANTUM);
    CHECKF(link_.drr.bytes == 9 * QUANTUM && link_.jobs[1].bytes == 3 * QUANTUM,
           "queued %llu, job B %llu", (unsigned long long)link_.drr.bytes,
           (unsigned long long)link_.jobs[1].bytes);
    expect_order(__LINE__, "A1 B1 C1 A2 B2 C2 A3 B3 C3");
    expect_drained(__LINE__);
}

/* Shares are in bytes: a job of half-quantum chunks sends two a turn. */
static void shares_are_bytes(void)
{
    reset(WINDOW, UNLIMITED);
    push(0, 1, 6, QUANTUM / 2);
    push(1, 1, 3, QUANTUM);
    expect_order(__LINE__, "A1 A2 B1 A3 A4 B2 A5 A6 B3");
    expect_shares(__LINE__, 3 * QUANTUM);
    expect_drained(__LINE__);
}

/* A chunk larger than a quantum goes once the turns saved enough. */
static void large_chunks_carry_deficit(void)
{
    reset(WINDOW, UNLIMITED);
    push(0, 1, 2, 3 * QUANTUM / 2);
    push(1, 1, 3, QUANTUM);
    /* A: 1000 < 1500, waits; B1; A: 2000, A1 leaves 500; B2; A: 1500, A2. */
    expect_order(__LINE__, "B1 A1 B2 A2 B3");
    expect_drained(__LINE__);

    /* Alone, such a chunk takes one serve per quantum it costs. */
    push(0, 1, 1, 5 * QUANTUM / 2);
    expect_order(__LINE__, "");
    CHECKF(link_.jobs[0].deficit == QUANTUM, "deficit %llu after one turn",
           (unsigned long long)link_.jobs[0].deficit);
    expect_order(__LINE__, "");
    expect_order(__LINE__, "A1");
    expect_drained(__LINE__);
}

/* Jobs with nothing queued have no turn; an emptied job's unused deficit
 * does not follow it into its next burst. */
static void idle_jobs_are_skipped(void)
{
    reset(WINDOW, UNLIMITED);
    push(0, 1, 2, QUANTUM);
    push(2, 1, 2, QUANTUM);
    expect_order(__LINE__, "A1 C1 A2 C2");
    CHECKF(!link_.jobs[1].active && !link_.jobs[3].active,
           "a job without chunks got a turn");
    expect_drained(__LINE__);

    push(1, 1, 1, 400);
    expect_order(__LINE__, "B1");
    expect_drained(__LINE__); /* B's 600 left over are gone */
    push(0, 2, 3, 800);
    push(1, 2, 3, 800);
    /* With the 600 kept, B would send B2 and B3 in one turn. */
    expect_order(__LINE__, "A2 B2 A3 B3");
    expect_drained(__LINE__);
}

/* A job whose head cannot go yet (window, streams) keeps its place and
 * what is left of its deficit. */
static void blocked_job_keeps_deficit(void)
{
    reset(WINDOW, 700);
    push(0, 1, 4, QUANTUM / 2);
    push(1, 1, 2, QUANTUM);
    expect_order(__LINE__, "A1");
    CHECKF(link_.jobs[0].deficit == QUANTUM / 2 && link_.jobs[1].deficit == 0,
           "deficits A %llu, B %llu", (unsigned long long)link_.jobs[0].deficit,
           (unsigned long long)link_.jobs[1].deficit);
    CHECKF(TAILQ_FIRST(&link_.drr.active) == &link_.jobs[1],
           "B's turn should come first");
    link_.budget = 200; /* room for nothing queued */
    expect_order(__LINE__, "");
    link_.budget = UNLIMITED;
    expect_order(__LINE__, "B1 A2 A3 A4 B2");
    expect_shares(__LINE__, 2 * QUANTUM);
    expect_drained(__LINE__);
}

/* A job that ended drops its queue, references and all, and leaves the
 * turns. */
static void dropped_job_leaves(void)
{
    reset(WINDOW, UNLIMITED);
    push(0, 1, 3, QUANTUM);
    push(1, 1, 2, 600);
    struct chunk *dropped[2], *c;
    int n = 0;
    TAILQ_FOREACH(c, &link_.jobs[1].chunks, entry)
    {
        chunk_ref(c); /* so that the drop's unref can be seen */
        dropped[n++] = c;
    }
    drr_drop(&link_.drr, &link_.jobs[1]);
    CHECKF(link_.drr.bytes == 3 * QUANTUM && !link_.jobs[1].active &&
               link_.jobs[1].bytes == 0 && TAILQ_EMPTY(&link_.jobs[1].chunks),
           "after the drop: %llu bytes queued, B active %d",
           (unsigned long long)link_.drr.bytes, link_.jobs[1].active);
    for (int i = 0; i < n; i++) {
        CHECKF(dropped[i]->refs == 1, "dropped chunk %d keeps %d refs", i,
               dropped[i]->refs);
        chunk_unref(dropped[i]);
        link_.chunks_alive--;
    }
    expect_order(__LINE__, "A1 A2 A3");
    expect_drained(__LINE__);
}

/*
 * Four jobs of very different chunk sizes, all backlogged, through streams
 * that make room for 3000 bytes at a time: at every point the bytes of any
 * two differ by less than a quantum plus two of the largest chunks (the
 * bound of deficit round robin), and so the shares are equal.
 */
static void fair_over_many_rounds(void)
{
    static const uint64_t cost[JOBS] = {QUANTUM, 300, 1700, GC_HEADER_SIZE};
    const uint64_t backlog = 400000, bound = QUANTUM + 2 * 1700;
    reset(ROOM, 0);
    for (int j = 0; j < JOBS; j++)
        push(j, 1, (unsigned)(backlog / cost[j]), cost[j]);
    int worst_round = -1;
    uint64_t worst = 0;
    for (int round = 0; round < 300; round++) {
        link_.budget += 3000;
        int moved;
        serve(&moved);
        uint64_t lo = UINT64_MAX, hi = 0;
        for (int j = 0; j < JOBS; j++) {
            lo = link_.bytes[j] < lo ? link_.bytes[j] : lo;
            hi = link_.bytes[j] > hi ? link_.bytes[j] : hi;
        }
        if (hi - lo > worst) {
            worst = hi - lo;
            worst_round = round;
        }
    }
    CHECKF(worst <= bound, "jobs' bytes %llu apart after round %d (bound %llu)",
           (unsigned long long)worst, worst_round, (unsigned long long)bound);
    uint64_t total = 0;
    for (int j = 0; j < JOBS; j++)
        total += link_.bytes[j];
    /* The room is used up, and by at most one chunk beyond it. */
    CHECKF(total >= 300 * 3000ull && total < 300 * 3000ull + 1700,
           "%llu bytes went where 900000 had room", (unsigned long long)total);
    for (int j = 0; j < JOBS; j++)
        drr_drop(&link_.drr, &link_.jobs[j]);
    CHECKF(link_.drr.bytes == 0 && TAILQ_EMPTY(&link_.drr.active),
           "%llu bytes left after the drops",
           (unsigned long long)link_.drr.bytes);
}

int main(void)
{
    equal_chunks_take_turns();
    shares_are_bytes();
    large_chunks_carry_deficit();
    idle_jobs_are_skipped();
    blocked_job_keeps_deficit();
    dropped_job_leaves();
    fair_over_many_rounds();
    return unit_check_report("link_drr: ");
}
