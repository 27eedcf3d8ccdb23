/*
 * The performance model (libgridcoll/core/gc_model.c, docs/model.md): the
 * parser on a good file and on every kind of error, each reported as
 * file:line: message; the lg prediction against Steffenel eq. 7 computed
 * by hand; model-mode choices (coll_model_choose) are the argmin of the
 * predictions, over algorithms and segment sizes.  No MPI job.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/select/gc_coll_algo.h"
#include "core/gc_model.h"
#include "unit_check.h"

static char dir[] = "/tmp/test_model.XXXXXX";

static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
    return path;
}

#define SITE_A                                                                 \
    "  { name = \"alpha\"; size = 2; alpha = 1e-5; beta = 1e-9;\n"             \
    "    gamma = 2.0; delta = 1e-3; threshold = 100000.0; },\n"
#define SITE_B                                                                 \
    "  { name = \"beta\"; size = 3; alpha = 1e-5; beta = 1e-9;\n"              \
    "    gamma = 2.0; delta = 1e-3; threshold = 100000.0; }\n"
#define LINK_AB                                                                \
    "  { sites = [\"alpha\", \"beta\"]; alpha = 0.01; beta = 1e-8;\n"          \
    "    gap = 0.0; beta_bulk = 0.0; }\n"

static const char good[] = "# a model\n"
                           "version = 1;\n"
                           "sites = (\n" SITE_A SITE_B ");\n"
                           "links = (\n" LINK_AB ");\n";

static struct gc_model model;

static int close_to(double a, double b)
{
    return fabs(a - b) <= 1e-12 * fabs(b);
}

static void test_good(void)
{
    char err[512] = "";
    const char *path = write_file("good.cfg", good);
    CHECKF(gc_model_load(path, &model, err, sizeof err) == 0, "good: %s", err);
    CHECK(model.site_count == 2, "%d sites", model.site_count);
    CHECK(strcmp(model.sites[1].name, "beta") == 0, "%s", model.sites[1].name);
    CHECK(model.sites[0].size == 2 && model.sites[1].size == 3, "sizes");
    CHECK(model.sites[0].gamma == 2.0 && model.sites[0].delta == 1e-3 &&
              model.sites[0].threshold == 100000.0,
          "contention signature");
    const struct gc_model_link *ab = gc_model_link(&model, 0, 1),
                               *ba = gc_model_link(&model, 1, 0);
    CHECK(ab->alpha == 0.01 && ab->beta == 1e-8 && ba->alpha == 0.01 &&
              ba->beta == 1e-8,
          "link both ways");

    /* What gc_model_write writes reads back the same. */
    char again[300];
    snprintf(again, sizeof again, "%s/again.cfg", dir);
    CHECK(gc_model_write(&model, again, "test") == 0, "write");
    static struct gc_model back;
    CHECKF(gc_model_load(again, &back, err, sizeof err) == 0, "reread: %s",
           err);
    CHECK(back.site_count == 2 && back.sites[1].gamma == 2.0 &&
              gc_model_link(&back, 1, 0)->beta == 1e-8,
          "round trip");
}

struct bad_case {
    const char *name;
    const char *text;
    const char *message; /* after "path:" */
};

static const struct bad_case bad[] = {
    {"syntax", "version = 1;\nsites = (\n  { name = ; }\n);\n",
     "3: syntax error"},
    {"version", "version = 2;\nsites = (\n" SITE_A SITE_B ");\n", "1: version"},
    {"missing_links", "version = 1;\nsites = (\n" SITE_A SITE_B ");\n",
     " missing key 'links'"},
    {"gamma_bounds",
     "version = 1;\nsites = (\n" SITE_A
     "  { name = \"beta\"; size = 3; alpha = 1e-5; beta = 1e-9;\n"
     "    gamma = 5000.0; delta = 1e-3; threshold = 0.0; }\n);\n"
     "links = (\n" LINK_AB ");\n",
     "6: sites[1].gamma = 5000 is out of bounds (0.01..1000)"},
    {"alpha_negative",
     "version = 1;\nsites = (\n"
     "  { name = \"alpha\"; size = 2; alpha = -1e-5; beta = 1e-9;\n"
     "    gamma = 2.0; delta = 1e-3; threshold = 100000.0; },\n" SITE_B
     ");\nlinks = (\n" LINK_AB ");\n",
     "3: sites[0].alpha = -1e-05 is out of bounds (0..1)"},
    {"link_beta_bounds",
     "version = 1;\nsites = (\n" SITE_A SITE_B ");\nlinks = (\n"
     "  { sites = [\"alpha\", \"beta\"]; alpha = 0.01; beta = 1.0;\n"
     "    gap = 0.0; beta_bulk = 0.0; }\n);\n",
     "9: links[0].beta = 1 is out of bounds (0..0.001)"},
    {"missing_key",
     "version = 1;\nsites = (\n" SITE_A
     "  { name = \"beta\"; size = 3; alpha = 1e-5; beta = 1e-9;\n"
     "    gamma = 2.0; threshold = 0.0; }\n);\nlinks = (\n" LINK_AB ");\n",
     "5: sites[1]: missing key 'delta'"},
    {"unknown_key",
     "version = 1;\nsites = (\n" SITE_A SITE_B ");\nlinks = (\n"
     "  { sites = [\"alpha\", \"beta\"]; alpha = 0.01; beta = 1e-8;\n"
     "    gap = 0.0; beta_bulk = 0.0; bandwidth = 1.0; }\n);\n",
     "10: links[0]: unknown key 'bandwidth'"},
    {"not_a_number",
     "version = 1;\nsites = (\n"
     "  { name = \"alpha\"; size = 2; alpha = \"fast\"; beta = 1e-9;\n"
     "    gamma = 2.0; delta = 1e-3; threshold = 100000.0; },\n" SITE_B
     ");\nlinks = (\n" LINK_AB ");\n",
     "3: sites[0].alpha: want a number"},
    {"size_float",
     "version = 1;\nsites = (\n"
     "  { name = \"alpha\"; size = 2.5; alpha = 1e-5; beta = 1e-9;\n"
     "    gamma = 2.0; delta = 1e-3; threshold = 100000.0; },\n" SITE_B
     ");\nlinks = (\n" LINK_AB ");\n",
     "3: sites[0].size: want an integer"},
    {"duplicate_site",
     "version = 1;\nsites = (\n" SITE_A
     "  { name = \"alpha\"; size = 1; alpha = 0.0; beta = 0.0;\n"
     "    gamma = 1.0; delta = 0.0; threshold = 0.0; }\n);\nlinks = ();\n",
     "5: sites[1]: site 'alpha' is listed twice"},
    {"unknown_site",
     "version = 1;\nsites = (\n" SITE_A SITE_B ");\nlinks = (\n"
     "  { sites = [\"alpha\", \"gamma\"]; alpha = 0.01; beta = 1e-8;\n"
     "    gap = 0.0; beta_bulk = 0.0; }\n);\n",
     "9: links[0].sites: 'gamma' is not in sites"},
    {"missing_link",
     "version = 1;\nsites = (\n" SITE_A SITE_B ");\nlinks = ();\n",
     "8: links: no link between sites alpha and beta"},
    {"samples_order",
     "version = 1;\nsites = (\n" SITE_A SITE_B ");\nlinks = (\n"
     "  { sites = [\"alpha\", \"beta\"]; alpha = 0.01; beta = 1e-8;\n"
     "    gap = 0.0; beta_bulk = 0.0;\n"
     "    one_way = ( [8.0, 0.02], [8.0, 0.03] ); }\n);\n",
     "11: links[0].one_way[1]: sizes must increase (8 after 8)"},
    {"samples_bounds",
     "version = 1;\nsites = (\n" SITE_A SITE_B ");\nlinks = (\n"
     "  { sites = [\"alpha\", \"beta\"]; alpha = 0.01; beta = 1e-8;\n"
     "    gap = 0.0; beta_bulk = 0.0;\n"
     "    one_way = ( [8.0, 100.0] ); }\n);\n",
     "11: links[0].one_way[0] = [8, 100] is out of bounds"},
    {"exchange_shape",
     "version = 1;\nsites = (\n" SITE_A SITE_B ");\nlinks = (\n"
     "  { sites = [\"alpha\", \"beta\"]; alpha = 0.01; beta = 1e-8;\n"
     "    gap = 0.0; beta_bulk = 0.0;\n"
     "    exchange = ( [8.0] ); }\n);\n",
     "11: links[0].exchange[0]: want [bytes, seconds] (two floats)"},
    {"unknown_top", "version = 1;\nsite = ();\n",
     "2: unknown key 'site' (want version, sites, links)"},
};

static void test_errors(void)
{
    char err[512];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *path = write_file(bad[i].name, bad[i].text);
        char want[600];
        snprintf(want, sizeof want, "%s:%s", path, bad[i].message);
        err[0] = '\0';
        int rc = gc_model_load(path, &model, err, sizeof err);
        CHECKF(rc == -1 && strncmp(err, want, strlen(want)) == 0,
               "%s: got '%s', want '%s...'", bad[i].name, err, want);
    }
    char missing[300];
    snprintf(missing, sizeof missing, "%s/none.cfg", dir);
    CHECKF(gc_model_load(missing, &model, err, sizeof err) == -1 &&
               strstr(err, "none.cfg: No such file") != NULL,
           "missing file: %s", err);
}

static int sizes[2] = {2, 3}, map[2] = {0, 1};

static struct coll_cost_args call(size_t bytes)
{
    return (struct coll_cost_args){.site_count = 2,
                                   .size = sizes[0] + sizes[1],
                                   .site_size = sizes,
                                   .model = &model,
                                   .model_site = map,
                                   .bytes = bytes};
}

/* Measured one-way times replace α_w + mβ_w: interpolated between
 * samples, flat below, β_w beyond. */
static void test_samples(void)
{
    char err[512];
    const char *path = write_file(
        "samples.cfg",
        "version = 1;\nsites = (\n" SITE_A SITE_B ");\nlinks = (\n"
        "  { sites = [\"alpha\", \"beta\"]; alpha = 0.01; beta = 1e-8;\n"
        "    gap = 0.0; beta_bulk = 0.0;\n"
        "    one_way = ( [8.0, 0.02], [65536.0, 0.07], [1048576.0, 0.06] ); "
        "}\n);\n");
    CHECKF(gc_model_load(path, &model, err, sizeof err) == 0, "%s", err);
    const struct gc_model_link *l = gc_model_link(&model, 1, 0);
    CHECK(l->one_way.count == 3, "%d samples", l->one_way.count);
    CHECK(gc_model_one_way(l, 1) == 0.02, "below the first sample");
    CHECK(close_to(gc_model_one_way(l, 8 + (65536 - 8) / 2.0), 0.045),
          "interpolated");
    CHECK(close_to(gc_model_one_way(l, 1048576), 0.06), "at a sample");
    CHECK(close_to(gc_model_one_way(l, 2097152), 0.06 + 1048576 * 1e-8),
          "beyond: the last sample plus beta");
    CHECK(gc_model_exchange(l, 65536) == 0, "no exchange samples: no bound");
    model.links[1].one_way.count = 0;
    CHECK(close_to(gc_model_one_way(&model.links[1], 1000), 0.01 + 1000 * 1e-8),
          "without samples: alpha + m beta");
}

/* Exchange samples: interpolated like one_way, beta_bulk beyond, and
 * written back as read. */
static void test_exchange(void)
{
    char err[512];
    const char *path = write_file(
        "exchange.cfg",
        "version = 1;\nsites = (\n" SITE_A SITE_B ");\nlinks = (\n"
        "  { sites = [\"alpha\", \"beta\"]; alpha = 0.01; beta = 1e-8;\n"
        "    gap = 0.0; beta_bulk = 2e-8;\n"
        "    one_way = ( [8.0, 0.02] );\n"
        "    exchange = ( [8.0, 0.021], [1048576.0, 0.08] ); }\n);\n");
    CHECKF(gc_model_load(path, &model, err, sizeof err) == 0, "%s", err);
    const struct gc_model_link *l = gc_model_link(&model, 0, 1);
    CHECK(l->exchange.count == 2, "%d exchange samples", l->exchange.count);
    CHECK(gc_model_exchange(l, 1) == 0.021, "below the first sample");
    CHECK(close_to(gc_model_exchange(l, 8 + (1048576 - 8) / 4.0),
                   0.021 + (0.08 - 0.021) / 4),
          "interpolated");
    CHECK(close_to(gc_model_exchange(l, 2097152), 0.08 + 1048576 * 2e-8),
          "beyond: the last sample plus beta_bulk");
    CHECK(close_to(gc_model_one_way(l, 1048576), 0.02 + (1048576 - 8) * 1e-8),
          "one_way keeps its own samples");
    char copy[300];
    snprintf(copy, sizeof copy, "%s/exchange-copy.cfg", dir);
    static struct gc_model again;
    CHECKF(gc_model_write(&model, copy, "test") == 0 &&
               gc_model_load(copy, &again, err, sizeof err) == 0,
           "write and read back: %s", err);
    const struct gc_model_link *r = gc_model_link(&again, 0, 1);
    /* lg's WAN phase, 2 + 3 ranks: 6m bytes each way; with m = 100000
     * the exchange (0.0548) beats eq. 7's one-port 2 one_way(2m) =
     * 0.044 and the bulk bound 0.022, so it is what the phase costs. */
    struct coll_cost_args c = call(100000);
    double with = alltoall_grid_lg_cost(&c);
    double both_ways = gc_model_exchange(l, 600000);
    model.links[1].exchange.count = model.links[2].exchange.count = 0;
    double without = alltoall_grid_lg_cost(&c);
    CHECKF(
        close_to(with - without, both_ways - 2 * (0.02 + (200000 - 8) * 1e-8)),
        "lg takes the exchange: %.15g - %.15g", with, without);
    CHECK(r->exchange.count == 2 && r->exchange.bytes[1] == 1048576 &&
              close_to(r->exchange.time[1], 0.08) && r->one_way.count == 1,
          "curves survive the round trip");
}

/* Eq. 7 with the local phases of eq. 5, n1 = 2, n2 = 3, N = 5, α = 1e-5,
 * β = 1e-9, γ = 2, δ = 1e-3 from M = 100000, α_w = 0.01, β_w = 1e-8. */
static void test_eq7(void)
{
    char err[512];
    CHECKF(gc_model_load(write_file("eq7.cfg", good), &model, err,
                         sizeof err) == 0,
           "%s", err);
    /* m = 10000: bundles of 25000 (site of 2) and 50000/3 (site of 3),
     * both below M; site of 3 is slower: 2 (α + 2 β 50000/3).  WAN:
     * ⌈3/2⌉ (α_w + β_w 2 m). */
    struct coll_cost_args c = call(10000);
    double want =
        2 * (1e-5 + 2 * 1e-9 * 50000.0 / 3) + 2 * (0.01 + 1e-8 * 2 * 10000);
    double got = alltoall_grid_lg_cost(&c);
    CHECKF(close_to(got, want), "eq. 7, m=10000: %.15g, want %.15g", got, want);
    /* m = 50000: the site of 2 has bundles of 125000 >= M: (α + 2 β 125000
     * + δ); the site of 3 2 (α + 2 β 250000/3); WAN 2 (α_w + β_w 100000). */
    c = call(50000);
    want = (1e-5 + 2 * 1e-9 * 125000 + 1e-3) + 2 * (0.01 + 1e-8 * 100000);
    got = alltoall_grid_lg_cost(&c);
    CHECKF(close_to(got, want), "eq. 7, m=50000: %.15g, want %.15g", got, want);
    /* Eq. 6 for direct, two sites: the local phase with blocks of m, then
     * max(n1, n2) = 3 messages of m in the 1-port view. */
    c = call(10000);
    want = 2 * (1e-5 + 2 * 1e-9 * 10000) + 3 * (0.01 + 1e-8 * 10000);
    got = alltoall_grid_direct_cost(&c);
    CHECKF(close_to(got, want), "eq. 6, m=10000: %.15g, want %.15g", got, want);
    /* The bulk bound counts once the link, not one stream, limits:
     * α_w + n1 n2 m β_bulk. */
    struct gc_model_link *l = &model.links[1];
    l->beta_bulk = model.links[2].beta_bulk = 1e-6;
    c = call(10000);
    want = 2 * (1e-5 + 2 * 1e-9 * 50000.0 / 3) + 0.01 + 6 * 10000 * 1e-6;
    got = alltoall_grid_lg_cost(&c);
    CHECKF(close_to(got, want), "bulk bound: %.15g, want %.15g", got, want);
}

/* The choice is the cheapest candidate, at its cheapest segment size. */
static void check_argmin(enum gc_coll_kind kind, size_t bytes,
                         const char *expect)
{
    const struct coll_table *t = coll_table_of(kind);
    struct coll_prediction out[16];
    struct coll_cost_args c = call(bytes);
    int best = coll_model_choose(t, &c, 0, NULL, out);
    CHECKF(best >= 0, "%s: no choice", coll_table_name(t));
    if (best < 0)
        return;
    for (int i = 0; i < t->algo_count; i++) {
        if (!out[i].candidate)
            continue;
        CHECKF(out[best].cost <= out[i].cost, "%s %zu: %s %g > %s %g",
               coll_table_name(t), bytes, t->algos[best].name, out[best].cost,
               t->algos[i].name, out[i].cost);
        if (!t->algos[i].segmented)
            continue;
        for (size_t seg = 16384; seg <= ((size_t)16 << 20); seg *= 2) {
            c.segsize = seg;
            double cost = t->algos[i].cost(&c);
            CHECKF(out[i].cost <= cost, "%s %s %zu: segsize %zu beats %zu",
                   coll_table_name(t), t->algos[i].name, bytes, seg,
                   out[i].segsize);
        }
    }
    CHECKF(expect == NULL || strcmp(t->algos[best].name, expect) == 0,
           "%s %zu: chose %s, want %s", coll_table_name(t), bytes,
           t->algos[best].name, expect);
}

static void test_choice(void)
{
    char err[512];
    CHECKF(gc_model_load(write_file("choice.cfg", good), &model, err,
                         sizeof err) == 0,
           "%s", err);
    /* One WAN message per pair of sites wins when each costs a second. */
    model.links[1].gap = model.links[2].gap = 1.0;
    check_argmin(GC_COLL_ALLTOALL, 8, "hier");
    /* Free messages, equal sites (eq. 7's ⌈n2/n1⌉ = 1): lg's one WAN
     * start-up per rank beats direct's three and hier's coordinator. */
    model.links[1].gap = model.links[2].gap = 0;
    sizes[0] = 3;
    check_argmin(GC_COLL_ALLTOALL, 65536, "lg");
    sizes[0] = 2;
    check_argmin(GC_COLL_BCAST, 1024, NULL);
    check_argmin(GC_COLL_BCAST, (size_t)16 << 20, NULL);
    check_argmin(GC_COLL_ALLREDUCE, (size_t)1 << 20, NULL);
    check_argmin(GC_COLL_REDUCE, (size_t)4 << 20, NULL);
    /* Tables without cost functions: no choice, the rules decide. */
    struct coll_prediction out[16];
    struct coll_cost_args c = call(1024);
    CHECK(coll_model_choose(coll_table_of(GC_COLL_ALLGATHER), &c, 0, NULL,
                            out) == -1,
          "allgather has no cost functions");
    /* A fixed segment size is the only one tried. */
    c = call((size_t)8 << 20);
    int best =
        coll_model_choose(coll_table_of(GC_COLL_BCAST), &c, 65536, NULL, out);
    CHECK(best >= 0 && (!coll_table_of(GC_COLL_BCAST)->algos[best].segmented ||
                        out[best].segsize == 65536),
          "fixed segsize");
}

int main(void)
{
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    test_good();
    test_errors();
    test_eq7();
    test_samples();
    test_exchange();
    test_choice();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    return unit_check_report("test_model: ");
}
