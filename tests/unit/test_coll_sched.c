/*
 * The schedule engine (libgridcoll/coll/engine/coll_sched.c) on the steps
 * that run on this process alone: CALL steps, fences and joins, sends and
 * receives with itself over the communicator's local_p2p, a LOCAL
 * collective of the one-member site, and gates (coll_sched_wait_mpich on
 * an MPICH receive the test completes when it wants).
 *   - ready CALL steps run in the order they were added, a step after a
 *     fence or a join only once every step it covers has finished;
 *   - sends and receives of one peer and tag are matched in added order;
 *   - a run ends (done called once, coll_sched_active 0) when every step
 *     has, driven by the engine's progress hook; it can run again;
 *   - a failing step ends the run with its error: nothing after it runs,
 *     what is in flight finishes first; a run that cannot start returns
 *     its error without calling done;
 *   - a schedule holds its communicator and the op it holds: MPI_Op_free
 *     of that op waits for the schedule.
 * An MPICH singleton whose grid is faked (fake_grid.h).
 */
#include <string.h>

#include "coll/engine/coll_sched.h"
#include "fake_grid.h"
#include "unit_check.h"

/* The CALL steps' names, in the order they ran. */
static char trace[32];
static int traced;

static void trace_reset(void)
{
    traced = 0;
    trace[0] = '\0';
}

struct mark {
    char name;
    int rc; /* what the step returns */
};

static int mark_step(struct coll_sched *s, void *arg)
{
    (void)s;
    const struct mark *m = arg;
    if (traced + 1 < (int)sizeof trace) {
        trace[traced++] = m->name;
        trace[traced] = '\0';
    }
    return m->rc;
}

static struct mark marks[26];

/* A CALL step that records `name` and returns rc. */
static int mark(struct coll_sched *s, char name, int rc, int after)
{
    struct mark *m = &marks[name - 'a'];
    *m = (struct mark){name, rc};
    return coll_sched_call(s, mark_step, m, after);
}

/* Gates (two at most): a step that finishes when the test says so. */
static MPI_Comm gate_comm;
static MPI_Request gate_req[2];
static int gate_buf[2];

static int gate(struct coll_sched *s, int g, int after)
{
    int step = coll_sched_wait_mpich(s, &gate_req[g], after);
    PMPI_Irecv(&gate_buf[g], 1, MPI_INT, 0, g, gate_comm, &gate_req[g]);
    return step;
}

static void open_gate(int g)
{
    PMPI_Send(&g, 1, MPI_INT, 0, g, gate_comm);
}

static int done_calls, done_status;

static void on_done(struct coll_sched *s, int status, void *arg)
{
    (void)s;
    (void)arg;
    done_calls++;
    done_status = status;
}

/* Progress passes, as the runtime's would run them. */
static void passes(int n)
{
    for (int i = 0; i < n; i++)
        coll_sched_progress_hook.after_poll();
}

/* Passes until done is called, a bounded number. */
static void finish(void)
{
    for (int i = 0; i < 10000 && done_calls == 0; i++)
        passes(1);
}

static int start(struct coll_sched *s)
{
    done_calls = 0;
    done_status = -1;
    trace_reset();
    return coll_sched_start(s, on_done, NULL);
}

static int error_class(int code)
{
    int cls = -1;
    MPI_Error_class(code, &cls);
    return cls;
}

static void test_order(struct gc_comm *c)
{
    struct coll_sched *s = coll_sched_new(c, "test", NULL);
    int x = mark(s, 'x', MPI_SUCCESS, -1);
    int g = gate(s, 0, -1);
    int y = mark(s, 'y', MPI_SUCCESS, g);
    mark(s, 'z', MPI_SUCCESS, -1);
    int f = coll_sched_fence(s);
    mark(s, 'w', MPI_SUCCESS, f);
    int xy[] = {x, y, -1};
    mark(s, 'v', MPI_SUCCESS, coll_sched_join(s, xy, 3));
    mark(s, 'u', MPI_SUCCESS, -1);

    CHECK(start(s) == MPI_SUCCESS, "start");
    CHECK(strcmp(trace, "xzu") == 0, "before the gate: %s", trace);
    passes(20);
    CHECK(strcmp(trace, "xzu") == 0, "the gate still shut: %s", trace);
    CHECK(done_calls == 0 && coll_sched_active(s), "ended before the gate");
    open_gate(0);
    finish();
    CHECK(strcmp(trace, "xzuywv") == 0, "after the gate: %s", trace);
    CHECK(done_calls == 1 && done_status == MPI_SUCCESS,
          "done %d times, status %d", done_calls, done_status);
    CHECK(!coll_sched_active(s), "still active");
    coll_sched_free(s);
}

static void test_transfers(struct gc_comm *c)
{
    static const char first[] = "first", second[] = "second";
    char out[16] = "", r1[16] = "", r2[16] = "", r3[16] = "";
    int one = 3, sum = -1, in = 4, inout = 5;
    struct coll_sched *s = coll_sched_new(c, "test", NULL);
    /* The receives first: posted at once, they wait for the sends. */
    coll_sched_recv(s, c->rank, 4, r1, sizeof first, MPI_CHAR, -1);
    coll_sched_recv(s, c->rank, 4, r2, sizeof second, MPI_CHAR, -1);
    int r = coll_sched_recv(s, c->rank, 5, r3, sizeof first, MPI_CHAR, -1);
    int p = coll_sched_copy(s, out, first, sizeof first, -1);
    coll_sched_send(s, c->rank, 4, first, sizeof first, MPI_CHAR, -1);
    coll_sched_send(s, c->rank, 4, second, sizeof second, MPI_CHAR, -1);
    coll_sched_send(s, c->rank, 5, out, sizeof first, MPI_CHAR, p);
    struct sched_local l = {.op = LOCAL_ALLREDUCE,
                            .sbuf = &one,
                            .rbuf = &sum,
                            .count = 1,
                            .type = MPI_INT,
                            .mop = MPI_SUM};
    int lo = coll_sched_local(s, &l, r);
    coll_sched_reduce(s, &in, &inout, 1, MPI_INT, MPI_SUM, lo);

    unsigned long long seq = c->coll_seq;
    for (int run = 0; run < 2; run++) {
        memset(r1, 0, sizeof r1);
        memset(r2, 0, sizeof r2);
        memset(r3, 0, sizeof r3);
        sum = -1;
        inout = 5;
        CHECK(coll_sched_run(s) == MPI_SUCCESS, "run %d", run);
        CHECK(strcmp(r1, first) == 0 && strcmp(r2, second) == 0,
              "run %d: one stream's messages in added order: %s, %s", run, r1,
              r2);
        CHECK(strcmp(r3, first) == 0, "run %d: sent after the copy: '%s'", run,
              r3);
        CHECK(sum == 3 && inout == 9, "run %d: local %d, reduced %d", run, sum,
              inout);
        CHECK(!coll_sched_active(s), "run %d: still active", run);
    }
    CHECK(c->coll_seq == seq + 2, "numbered %llu runs",
          (unsigned long long)(c->coll_seq - seq));
    coll_sched_free(s);
}

static void test_errors(struct gc_comm *c)
{
    /* In one pass: nothing after the failing step runs. */
    struct coll_sched *s = coll_sched_new(c, "test", NULL);
    int a = mark(s, 'a', MPI_SUCCESS, -1);
    int e = mark(s, 'e', MPI_ERR_OTHER, a);
    mark(s, 'b', MPI_SUCCESS, e);
    mark(s, 'd', MPI_SUCCESS, -1);
    trace_reset();
    int rc = coll_sched_run(s);
    CHECK(error_class(rc) == MPI_ERR_OTHER, "blocking run: %d", rc);
    CHECK(strcmp(trace, "ae") == 0, "blocking run ran %s", trace);
    CHECK(start(s) == MPI_SUCCESS, "start");
    CHECK(done_calls == 1 && error_class(done_status) == MPI_ERR_OTHER,
          "done %d times, status %d", done_calls, done_status);
    CHECK(strcmp(trace, "ae") == 0, "nonblocking run ran %s", trace);
    coll_sched_free(s);

    /* With a step in flight: the run ends once it has finished. */
    s = coll_sched_new(c, "test", NULL);
    int g = gate(s, 1, -1);
    mark(s, 'y', MPI_SUCCESS, g);
    mark(s, 'e', MPI_ERR_OTHER, -1);
    CHECK(start(s) == MPI_SUCCESS, "start");
    passes(20);
    CHECK(done_calls == 0 && coll_sched_active(s),
          "ended with its gate in flight");
    open_gate(1);
    finish();
    CHECK(done_calls == 1 && error_class(done_status) == MPI_ERR_OTHER,
          "done %d times, status %d", done_calls, done_status);
    CHECK(strcmp(trace, "e") == 0, "ran %s", trace);
    coll_sched_free(s);

    /* A blocking step behind a request: refused before anything runs. */
    s = coll_sched_new(c, "test", NULL);
    mark(s, 'a', MPI_SUCCESS, -1);
    coll_sched_call_blocking(s, mark_step, &marks[0], -1);
    CHECK(start(s) == MPI_ERR_INTERN, "a blocking step started");
    CHECK(done_calls == 0 && traced == 0 && !coll_sched_active(s),
          "a refused start ran");
    coll_sched_free(s);
}

static int op_calls;

static void counting_sum(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    op_calls++;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

static void test_holding(struct gc_comm *c)
{
    int refs = c->refs;
    struct coll_sched *s = coll_sched_new(c, "test", NULL);
    CHECK(c->refs == refs + 1, "the schedule holds %d refs", c->refs - refs);

    MPI_Op op, freed;
    MPI_Op_create(counting_sum, 1, &op);
    int in = 2, inout = 40;
    coll_sched_reduce(s, &in, &inout, 1, MPI_INT, op, -1);
    CHECK(coll_sched_hold_op(s, op) == MPI_SUCCESS, "hold");
    freed = op;
    CHECK(coll_sched_op_free(&freed) == MPI_SUCCESS && freed == MPI_OP_NULL,
          "MPI_Op_free of a held op");
    CHECK(coll_sched_run(s) == MPI_SUCCESS, "run");
    CHECK(op_calls == 1 && inout == 42, "the freed op ran %d times: %d",
          op_calls, inout);
    coll_sched_free(s);
    CHECK(c->refs == refs, "refs %d after the free, %d before", c->refs, refs);
}

int main(int argc, char **argv)
{
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
        return 1;
    static const int sizes[] = {1, 1}, members[] = {0, 1};
    fake_grid_sites(2, sizes);
    struct gc_comm *c = fake_grid_comm(members, 2, 10 * GC_CTX_STRIDE);
    PMPI_Comm_dup(MPI_COMM_SELF, &gate_comm);
    test_order(c);
    test_transfers(c);
    test_errors(c);
    test_holding(c);
    PMPI_Comm_free(&gate_comm);
    fake_grid_comm_free(c);
    MPI_Finalize();
    return unit_check_report("coll_sched: ");
}
