/*
 * Matching in the point-to-point engine (libgridcoll/p2p/gc_p2p_engine.c)
 * by MPI's rules.  Messages from other sites are handed to the engine
 * through the relay session's callbacks (gc_p2p_callbacks: on_alloc at
 * the first chunk, on_complete when every byte is in), as the relay
 * client would; receives are the engine's operations (gc_op_new,
 * gc_op_post_recv), probes its unexpected-queue lookup
 * (gc_engine_find_unexpected, what MPI_Iprobe and MPI_Mprobe use).  No
 * relay session: these paths send nothing.
 *   - two messages of one source and tag are received in arrival order,
 *     whichever was posted first;
 *   - MPI_ANY_SOURCE and MPI_ANY_TAG take the earliest message that
 *     matches; the earliest posted receive takes an arriving message;
 *   - a message longer than the receive: MPI_ERR_TRUNCATE, the bytes that
 *     fit;
 *   - a probe sees a message without receiving it, a taking probe takes
 *     it out of matching;
 *   - communicators, the collectives' context class and partitioned
 *     messages' negative tags never match each other's receives;
 *   - a message that arrives in chunks lands in its receive's buffer, and
 *     a receive bound to a message still arriving completes when it ends;
 *   - an MPI_ANY_SOURCE receive posted first takes a message from this
 *     site before a later receive naming its source.
 * An MPICH singleton whose grid is faked (fake_grid.h).
 */
#include <stdlib.h>
#include <string.h>

#include "fake_grid.h"
#include "p2p/gc_p2p_engine.h"
#include "unit_check.h"

static gc_rc_alloc_fn on_alloc;
static gc_rc_complete_fn on_complete;
static uint64_t next_seq[8]; /* per source grid rank, as the relay numbers */

/* A message from another site while it arrives. */
struct arrival {
    struct gc_rc_msg_info info;
    void *buf;
    int library_allocated;
};

/* Its first chunk: on_alloc, then its bytes where they go. */
static void begin(struct arrival *m, uint32_t src, uint32_t context,
                  int32_t tag, const char *text)
{
    size_t len = strlen(text);
    m->info =
        (struct gc_rc_msg_info){src, 0, context, tag, next_seq[src]++, len};
    m->buf = on_alloc(NULL, &m->info);
    m->library_allocated = m->buf == NULL;
    if (m->buf == NULL)
        m->buf = malloc(len > 0 ? len : 1);
    memcpy(m->buf, text, len);
}

static void end(struct arrival *m)
{
    on_complete(NULL, &m->info, m->buf, m->library_allocated);
}

static void arrive(uint32_t src, uint32_t context, int32_t tag,
                   const char *text)
{
    struct arrival m;
    begin(&m, src, context, tag, text);
    end(&m);
}

static struct op *post(struct gc_comm *c, int peer, int tag, void *buf,
                       int capacity)
{
    memset(buf, 0, (size_t)capacity);
    struct op *op = gc_op_new(OP_RECV, c, peer, tag, buf, capacity, MPI_CHAR);
    gc_op_post_recv(op);
    return op;
}

/* op completed with `text` from comm rank `source` and `tag`, and is
 * freed; `error` is its code. */
static void expect(int line, struct op *op, int source, int tag,
                   const char *text, int error)
{
    size_t len = strlen(text);
    CHECK_AT(op->done, line, "receive not complete (expected '%s')", text);
    if (!op->done)
        return;
    CHECK_AT(op->source == source && op->result_tag == tag, line,
             "from %d tag %d, expected %d tag %d", op->source, op->result_tag,
             source, tag);
    CHECK_AT(op->bytes == len && memcmp(op->buf, text, len) == 0, line,
             "got %zu bytes '%.*s', expected '%s'", op->bytes, (int)op->bytes,
             (const char *)op->buf, text);
    CHECK_AT(op->error == error, line, "error %d, expected %d", op->error,
             error);
    gc_op_free(op);
}

#define EXPECT(op, source, tag, text)                                          \
    expect(__LINE__, (op), (source), (tag), (text), MPI_SUCCESS)

/* Comm ranks and grid ranks of `c`: 0 this process, 1 and 2 on site 1. */
static struct gc_comm *c, *c2; /* c2: grid ranks 0 and 2 */
static char b1[16], b2[16], b3[16];

static void test_non_overtaking(void)
{
    arrive(1, c->context, 7, "one");
    arrive(1, c->context, 7, "two");
    struct op *r1 = post(c, 1, 7, b1, 16), *r2 = post(c, 1, 7, b2, 16);
    EXPECT(r1, 1, 7, "one");
    EXPECT(r2, 1, 7, "two");
    /* Posted before they arrive. */
    r1 = post(c, 1, 7, b1, 16);
    r2 = post(c, 1, 7, b2, 16);
    CHECK(!r1->done && !r2->done, "completed before the messages came");
    arrive(1, c->context, 7, "three");
    CHECK(r1->done && !r2->done, "the later receive took the first message");
    arrive(1, c->context, 7, "four");
    EXPECT(r1, 1, 7, "three");
    EXPECT(r2, 1, 7, "four");
}

static void test_wildcards(void)
{
    arrive(2, c->context, 3, "from2");
    arrive(1, c->context, 3, "from1");
    EXPECT(post(c, MPI_ANY_SOURCE, 3, b1, 16), 2, 3, "from2");
    EXPECT(post(c, MPI_ANY_SOURCE, 3, b1, 16), 1, 3, "from1");

    arrive(1, c->context, 9, "nine");
    arrive(1, c->context, 4, "four");
    EXPECT(post(c, 1, MPI_ANY_TAG, b1, 16), 1, 9, "nine");
    EXPECT(post(c, 1, 4, b1, 16), 1, 4, "four");

    /* A named receive passes over an earlier message it does not match;
     * that one stays for the next receive. */
    arrive(1, c->context, 9, "nine");
    arrive(2, c->context, 4, "four");
    EXPECT(post(c, 2, 4, b1, 16), 2, 4, "four");
    EXPECT(post(c, MPI_ANY_SOURCE, MPI_ANY_TAG, b1, 16), 1, 9, "nine");
}

static void test_posted_queue(void)
{
    /* The earliest posted receive that matches takes an arrival. */
    struct op *other = post(c, 1, 6, b3, 16);
    struct op *r1 = post(c, MPI_ANY_SOURCE, 5, b1, 16);
    struct op *r2 = post(c, 1, 5, b2, 16);
    arrive(1, c->context, 5, "a");
    CHECK(r1->done && !r2->done && !other->done,
          "not the earliest matching receive");
    arrive(1, c->context, 5, "b");
    EXPECT(r1, 1, 5, "a");
    EXPECT(r2, 1, 5, "b");
    arrive(1, c->context, 6, "six");
    EXPECT(other, 1, 6, "six");
}

static void test_truncation(void)
{
    struct op *r = post(c, 1, 8, b1, 4);
    arrive(1, c->context, 8, "truncated");
    expect(__LINE__, r, 1, 8, "trun", MPI_ERR_TRUNCATE);
    arrive(1, c->context, 8, "truncated");
    expect(__LINE__, post(c, 1, 8, b1, 4), 1, 8, "trun", MPI_ERR_TRUNCATE);
    /* Exactly the receive's size is no error. */
    arrive(1, c->context, 8, "four");
    EXPECT(post(c, 1, 8, b1, 4), 1, 8, "four");
}

static struct rx *probe(struct gc_comm *on, int peer, int tag, int take)
{
    struct op envelope = {.comm = on, .peer = peer, .tag = tag};
    return gc_engine_find_unexpected(&envelope, take);
}

static void test_probe(void)
{
    arrive(2, c->context, 11, "probe me");
    struct rx *seen = probe(c, 2, 11, 0);
    CHECK(seen != NULL, "probe saw nothing");
    if (seen != NULL) {
        const struct gc_rc_msg_info *info = gc_rx_info(seen);
        CHECK(info->src_rank == 2 && info->tag == 11 && info->msg_len == 8,
              "probed grid rank %u tag %d, %llu bytes", info->src_rank,
              info->tag, (unsigned long long)info->msg_len);
    }
    CHECK(probe(c, 2, 11, 0) == seen &&
              probe(c, MPI_ANY_SOURCE, MPI_ANY_TAG, 0) == seen,
          "a second probe sees another message");
    CHECK(probe(c, 1, 11, 0) == NULL && probe(c, 2, 12, 0) == NULL,
          "a probe of another source or tag sees it");
    EXPECT(post(c, 2, 11, b1, 16), 2, 11, "probe me");
    CHECK(probe(c, 2, 11, 0) == NULL, "a received message still probed");

    /* A taking probe (MPI_Mprobe): no receive matches it any more. */
    arrive(1, c->context, 12, "taken");
    struct rx *taken = probe(c, 1, 12, 1);
    CHECK(taken != NULL && probe(c, 1, 12, 0) == NULL,
          "a taken message still probed");
    struct op *r = post(c, 1, 12, b1, 16);
    CHECK(!r->done, "a receive matched a taken message");
    arrive(1, c->context, 12, "next");
    EXPECT(r, 1, 12, "next");
    gc_rx_free(taken);
}

static void test_separation(void)
{
    struct op *any = post(c, MPI_ANY_SOURCE, MPI_ANY_TAG, b1, 16);
    /* Another communicator's message; its ranks are its own. */
    arrive(2, c2->context, 13, "other comm");
    CHECK(!any->done, "a message of another communicator matched");
    EXPECT(post(c2, MPI_ANY_SOURCE, 13, b2, 16), 1, 13, "other comm");
    /* The collectives' class of c: only a transfer's receive takes it. */
    arrive(1, c->context + GC_CTX_COLL, 13, "coll");
    CHECK(!any->done, "a collective's message matched a user receive");
    struct op *xfer = gc_op_new(OP_RECV, c, 1, 13, b2, 16, MPI_CHAR);
    xfer->coll = GC_CTX_COLL;
    gc_op_post_recv(xfer);
    EXPECT(xfer, 1, 13, "coll");
    /* A partitioned message's negative tag: not for MPI_ANY_TAG. */
    arrive(1, c->context, -5, "partition");
    CHECK(!any->done, "MPI_ANY_TAG matched a partitioned message");
    arrive(1, c->context, 0, "user");
    EXPECT(any, 1, 0, "user");
    struct rx *partition = probe(c, 1, -5, 1);
    CHECK(partition != NULL, "the partitioned message is gone");
    gc_rx_free(partition);
}

static void test_chunks(void)
{
    struct arrival m;
    struct op *r = post(c, 1, 14, b1, 16);
    begin(&m, 1, c->context, 14, "in place");
    CHECK(m.buf == b1 && !m.library_allocated,
          "a matched message not received in place");
    CHECK(r->matched && !r->done, "complete at the first chunk");
    end(&m);
    EXPECT(r, 1, 14, "in place");

    begin(&m, 2, c->context, 14, "late");
    CHECK(m.library_allocated, "an unexpected message in place");
    r = post(c, 2, 14, b1, 16);
    CHECK(r->matched && !r->done, "complete before its last chunk");
    end(&m);
    EXPECT(r, 2, 14, "late");
}

/* The engine's part of a progress pass: matching on this site. */
static void local_passes(struct op *until)
{
    for (int i = 0; i < 1000 && !until->done; i++)
        gc_p2p_progress_hook.after_poll();
}

static void test_local_order(void)
{
    /* c->rank is this process, on this site: MPICH carries the message. */
    struct op *any = post(c, MPI_ANY_SOURCE, 20, b1, 16);
    struct op *named = post(c, c->rank, 20, b2, 16);
    MPI_Request sends[2];
    PMPI_Isend("here", 4, MPI_CHAR, 0, 20, c->local, &sends[0]);
    local_passes(any);
    CHECK(any->done && !named->done,
          "the named receive posted later took the message");
    PMPI_Isend("again", 5, MPI_CHAR, 0, 20, c->local, &sends[1]);
    local_passes(named);
    MPI_Status sent[2];
    PMPI_Waitall(2, sends, sent);
    EXPECT(any, 0, 20, "here");
    EXPECT(named, 0, 20, "again");
}

int main(int argc, char **argv)
{
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
        return 1;
    static const int sizes[] = {1, 2}, members[] = {0, 1, 2}, pair[] = {0, 2};
    fake_grid_sites(2, sizes);
    c = fake_grid_comm(members, 3, 10 * GC_CTX_STRIDE);
    c2 = fake_grid_comm(pair, 2, 11 * GC_CTX_STRIDE);
    gc_p2p_callbacks(&on_alloc, &on_complete);

    test_non_overtaking();
    test_wildcards();
    test_posted_queue();
    test_truncation();
    test_probe();
    test_separation();
    test_chunks();
    test_local_order();

    gc_engine_shutdown();
    fake_grid_comm_free(c2);
    fake_grid_comm_free(c);
    MPI_Finalize();
    return unit_check_report("p2p_engine: ");
}
