/*
 * coll_check: self-checking test of every MPI collective, written as an
 * ordinary MPI program (only mpi.h) so it runs unchanged under plain MPICH
 * and under gridrun, where MPI_COMM_WORLD spans several sites.
 *
 *   mpiexec -n 5 coll_check [CASE...]
 *   gridrun --site-sizes 2,1,2 -- coll_check [CASE...]
 *
 * Cases, one per collective: barrier bcast reduce allreduce reduce_scatter
 * reduce_scatter_block scan exscan gather gatherv scatter scatterv allgather
 * allgatherv alltoall alltoallv alltoallw.  Without arguments all run; with
 * arguments only the named ones.  Rank 0 prints "OK <case>" once every rank
 * has passed it; a rank that finds a mismatch prints "FAIL <case>: rank R:
 * ..." (communicator, datatype or op, count, root, in-place, and the first
 * wrong byte) and calls MPI_Abort(MPI_COMM_WORLD, 2).
 *
 * Every case runs on five communicators: the world; a dup of it; a split
 * whose keys reverse the rank order; a split by rank%2 (a site's members
 * are not contiguous world ranks); and one communicator whose order puts
 * the even world ranks first, then the odd ones, so sites interleave in
 * rank order.  Rank-order bugs show up on the last three.
 *
 * What is checked:
 * - Datatypes MPI_INT, MPI_DOUBLE, MPI_CHAR, MPI_BYTE, MPI_LONG_LONG,
 *   MPI_FLOAT, a strided vector (two ints with a hole, resized so elements
 *   have a trailing hole too) and a struct {int; double; int} with holes;
 *   counts 0, 1, 3 and 1000; every root; MPI_IN_PLACE wherever the
 *   standard allows it; irregular counts (including zeros) with
 *   displacements that leave gaps and reverse or rotate the block order.
 *   Bcast, Allreduce and Alltoall also move ~256 KiB per rank once on the
 *   world and the interleaved communicator.
 * - Reductions: SUM PROD MAX MIN on int, double, long long, float; LAND LOR
 *   LXOR on int, long long; BAND BOR BXOR on int, long long, byte; MAXLOC
 *   MINLOC on MPI_2INT and MPI_DOUBLE_INT (with ties: the lower index
 *   wins); a user-defined commutative op on the struct and vector types;
 *   and a user-defined non-commutative op (2x2 integer matrix product),
 *   whose result depends on rank order, on every communicator.
 * - Every byte of every buffer the call may write, plus one guard element
 *   past the end: receive buffers start filled with a sentinel, so holes
 *   inside derived datatypes, gaps between v-blocks and the guard must
 *   still hold it.  Send buffers are checked to be unchanged.
 * - Reference results are computed on each rank from a deterministic
 *   contribution function of (communicator rank, element), never with
 *   another MPI call.  Exscan's result on rank 0 is undefined and is not
 *   checked; nor is the part of an in-place Reduce_scatter buffer beyond the
 *   rank's own block.
 *
 * Parameters rotate rather than multiply out (each call costs milliseconds
 * on an oversubscribed machine): on each communicator, variant j uses root
 * j % size, so every root is visited, with MPI_IN_PLACE flipping between
 * a root's visits.  A variant number unique across the communicators picks
 * datatype and count: each data-movement collective meets every datatype
 * and every count, and together they meet every (datatype, count) pair;
 * Reduce and Allreduce run every (op, datatype) pair, the other reduction
 * collectives a rotating share, and every reduction collective runs the
 * non-commutative op on every communicator.
 *
 * Two MPICH 4.0.2 bugs shape the choices (details where they apply): no
 * MPI_IN_PLACE Reduce at a non-zero root with a built-in op over 2 KiB,
 * and the struct's data size is 16 bytes, not an odd size.
 *
 * COLL_CHECK_TRACE=1 in the environment makes every rank print each call
 * before it makes it: the last line per rank shows where a job hangs.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_util.h"

enum { SEND_SENTINEL = 0xA5, RECV_SENTINEL = 0x5A };

static int world_rank;
static int world_size;
/* What the current call was, for failure messages. */
static char call_description[256] = "";
/* COLL_CHECK_TRACE=1 in the environment: every rank prints each call
 * before making it, to find the one that hangs or crashes. */
static int trace;

/*
 * COLL_CHECK_FORM=nonblocking runs every collective as its MPI_I* form
 * completed by MPI_Wait, =persistent as its MPI_*_init form started once
 * with MPI_Start, completed by MPI_Wait and freed; the checks are the same.
 */
enum form { FORM_BLOCKING, FORM_NONBLOCKING, FORM_PERSISTENT };
static enum form form;
static MPI_Request pending;

static int wait_pending(int rc)
{
    if (rc != MPI_SUCCESS)
        return rc;
    return MPI_Wait(&pending, MPI_STATUS_IGNORE);
}

static int start_pending(int rc)
{
    if (rc == MPI_SUCCESS)
        rc = MPI_Start(&pending);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&pending, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && pending == MPI_REQUEST_NULL)
        fail("MPI_Wait freed a persistent request");
    return rc == MPI_SUCCESS ? MPI_Request_free(&pending) : rc;
}

#define COLL(blocking, nonblocking, persistent, ...)                           \
    (form == FORM_BLOCKING ? blocking(__VA_ARGS__)                             \
     : form == FORM_NONBLOCKING                                                \
         ? wait_pending(nonblocking(__VA_ARGS__, &pending))                    \
         : start_pending(persistent(__VA_ARGS__, MPI_INFO_NULL, &pending)))

static unsigned char *filled(size_t bytes, int byte)
{
    unsigned char *p = xmalloc(bytes);
    memset(p, byte, bytes);
    return p;
}

static unsigned char *copy_of(const unsigned char *source, size_t bytes)
{
    unsigned char *p = xmalloc(bytes);
    memcpy(p, source, bytes);
    return p;
}

static int max_int(int a, int b)
{
    return a > b ? a : b;
}

/* splitmix64's finalizer: consecutive inputs give unrelated outputs. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t seed_of(int a, int b, int c, int d)
{
    uint64_t h = mix((uint64_t)(uint32_t)a);
    h = mix(h ^ (uint64_t)(uint32_t)b);
    h = mix(h ^ (uint64_t)(uint32_t)c);
    return mix(h ^ (uint64_t)(uint32_t)d);
}

/* ---- datatypes under test --------------------------------------------- */

enum kind { K_INT, K_DOUBLE, K_CHAR, K_BYTE, K_LONG_LONG, K_FLOAT };
static const size_t kind_size[] = {4, 8, 1, 1, 8, 4};

struct field {
    size_t offset;
    enum kind kind;
};

/* A datatype as a list of typed fields inside an extent: bytes of the
 * extent not covered by a field are holes the library must not write. */
struct test_type {
    const char *name;
    MPI_Datatype datatype;
    size_t extent;
    int field_count;
    struct field fields[4];
};

static struct test_type type_int = {
    "int", MPI_DATATYPE_NULL, 4, 1, {{0, K_INT}}};
static struct test_type type_double = {
    "double", MPI_DATATYPE_NULL, 8, 1, {{0, K_DOUBLE}}};
static struct test_type type_char = {
    "char", MPI_DATATYPE_NULL, 1, 1, {{0, K_CHAR}}};
static struct test_type type_byte = {
    "byte", MPI_DATATYPE_NULL, 1, 1, {{0, K_BYTE}}};
static struct test_type type_long_long = {
    "long_long", MPI_DATATYPE_NULL, 8, 1, {{0, K_LONG_LONG}}};
static struct test_type type_float = {
    "float", MPI_DATATYPE_NULL, 4, 1, {{0, K_FLOAT}}};
/* Two ints with a hole between them and after them. */
static struct test_type type_vector = {
    "vector", MPI_DATATYPE_NULL, 16, 2, {{0, K_INT}, {8, K_INT}}};
/* Holes after the first int and after the last.  16 data bytes: MPICH
 * 4.0.2 over UCX fails ("Message truncated") to receive more than 8 KiB
 * sent as bytes into a type whose size does not divide its fragment size
 * (a 13-byte struct did), and its binomial Scatter/Gather do exactly that
 * between intermediate ranks. */
static struct test_type type_struct = {
    "struct",
    MPI_DATATYPE_NULL,
    24,
    3,
    {{0, K_INT}, {8, K_DOUBLE}, {16, K_INT}}};
static struct test_type type_2int = {
    "2int", MPI_DATATYPE_NULL, 8, 2, {{0, K_INT}, {4, K_INT}}};
/* MPI_DOUBLE_INT's 4 trailing bytes are padding, not data. */
static struct test_type type_double_int = {
    "double_int", MPI_DATATYPE_NULL, 16, 2, {{0, K_DOUBLE}, {8, K_INT}}};
/* A 2x2 matrix of ints, row-major, for the non-commutative op. */
static struct test_type type_matrix = {
    "matrix2x2",
    MPI_DATATYPE_NULL,
    16,
    4,
    {{0, K_INT}, {4, K_INT}, {8, K_INT}, {12, K_INT}}};

static const struct test_type *const data_types[] = {
    &type_int,       &type_double, &type_char,   &type_byte,
    &type_long_long, &type_float,  &type_vector, &type_struct};
enum { DATA_TYPE_COUNT = sizeof data_types / sizeof data_types[0] };

static const int counts[] = {0, 1, 3, 1000};
enum { COUNT_CHOICES = sizeof counts / sizeof counts[0] };

static void setup_types(void)
{
    type_int.datatype = MPI_INT;
    type_double.datatype = MPI_DOUBLE;
    type_char.datatype = MPI_CHAR;
    type_byte.datatype = MPI_BYTE;
    type_long_long.datatype = MPI_LONG_LONG;
    type_float.datatype = MPI_FLOAT;
    type_2int.datatype = MPI_2INT;
    type_double_int.datatype = MPI_DOUBLE_INT;

    MPI_Datatype vector;
    MPI_CHECK(MPI_Type_vector(2, 1, 2, MPI_INT, &vector));
    MPI_CHECK(MPI_Type_create_resized(vector, 0, 16, &type_vector.datatype));
    MPI_CHECK(MPI_Type_free(&vector));

    int lengths[3] = {1, 1, 1};
    MPI_Aint displacements[3] = {0, 8, 16};
    MPI_Datatype members[3] = {MPI_INT, MPI_DOUBLE, MPI_INT};
    MPI_Datatype structure;
    MPI_CHECK(
        MPI_Type_create_struct(3, lengths, displacements, members, &structure));
    MPI_CHECK(MPI_Type_create_resized(structure, 0, 24, &type_struct.datatype));
    MPI_CHECK(MPI_Type_free(&structure));

    MPI_CHECK(MPI_Type_contiguous(4, MPI_INT, &type_matrix.datatype));

    struct test_type *all[] = {&type_int,        &type_double,    &type_char,
                               &type_byte,       &type_long_long, &type_float,
                               &type_vector,     &type_struct,    &type_2int,
                               &type_double_int, &type_matrix};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        struct test_type *t = all[i];
        if (t->datatype != MPI_INT && t->datatype != MPI_DOUBLE &&
            t->datatype != MPI_CHAR && t->datatype != MPI_BYTE &&
            t->datatype != MPI_LONG_LONG && t->datatype != MPI_FLOAT &&
            t->datatype != MPI_2INT && t->datatype != MPI_DOUBLE_INT)
            MPI_CHECK(MPI_Type_commit(&t->datatype));
        MPI_Aint lower_bound, extent;
        int size;
        MPI_CHECK(MPI_Type_get_extent(t->datatype, &lower_bound, &extent));
        MPI_CHECK(MPI_Type_size(t->datatype, &size));
        size_t data_bytes = 0;
        for (int f = 0; f < t->field_count; f++)
            data_bytes += kind_size[t->fields[f].kind];
        CHECK(lower_bound == 0 && (size_t)extent == t->extent &&
                  (size_t)size == data_bytes,
              "datatype %s: lb %ld extent %ld size %d, want 0 %zu %zu", t->name,
              (long)lower_bound, (long)extent, size, t->extent, data_bytes);
    }
}

static int is_hole(const struct test_type *t, size_t offset)
{
    for (int f = 0; f < t->field_count; f++)
        if (offset >= t->fields[f].offset &&
            offset < t->fields[f].offset + kind_size[t->fields[f].kind])
            return 0;
    return 1;
}

/* ---- data for data-movement collectives --------------------------------
 * A message is a stream of basic values: value s of a message is a function
 * of the message's seed and s only, so a sender and a receiver with
 * different layouts of the same type signature (Alltoallw) agree on it. */

static void put_value(unsigned char *p, enum kind kind, uint64_t h)
{
    switch (kind) {
    case K_INT: {
        uint32_t v = (uint32_t)h;
        memcpy(p, &v, 4);
        break;
    }
    case K_DOUBLE: {
        /* Finite and exact: no NaN payloads for the library to canonicalise */
        double v = (double)(int64_t)(h >> 12) / 1024.0 - 1e12;
        memcpy(p, &v, 8);
        break;
    }
    case K_CHAR: *p = (unsigned char)(h & 0x7f); break;
    case K_BYTE: *p = (unsigned char)h; break;
    case K_LONG_LONG: memcpy(p, &h, 8); break;
    case K_FLOAT: {
        float v = (float)(int32_t)(h >> 40) / 16.0f;
        memcpy(p, &v, 4);
        break;
    }
    }
}

/* Writes elements [0, count) of the message with `seed` at `base`. */
static void put_stream(const struct test_type *t, unsigned char *base,
                       int count, uint64_t seed)
{
    for (long e = 0; e < count; e++)
        for (int f = 0; f < t->field_count; f++) {
            uint64_t index = (uint64_t)(e * t->field_count + f);
            put_value(base + (size_t)e * t->extent + t->fields[f].offset,
                      t->fields[f].kind, mix(seed ^ mix(index)));
        }
}

/* The seed of what `sender` sends to `receiver` (-1: the same to all) in
 * variant `k` of collective `collective`. */
static uint64_t data_seed(int collective, int k, int sender, int receiver)
{
    return seed_of(collective, k, sender, receiver);
}

/* ---- reductions --------------------------------------------------------- */

enum op_id {
    OP_SUM,
    OP_PROD,
    OP_MAX,
    OP_MIN,
    OP_LAND,
    OP_LOR,
    OP_LXOR,
    OP_BAND,
    OP_BOR,
    OP_BXOR,
    OP_MAXLOC,
    OP_MINLOC,
    OP_USER_COMMUTATIVE,
    OP_USER_MATRIX
};

static MPI_Op user_commutative_op = MPI_OP_NULL;
static MPI_Op user_matrix_op = MPI_OP_NULL;

struct op_case {
    const char *name;
    enum op_id id;
    const struct test_type *type;
};

static const struct op_case op_cases[] = {
    {"sum", OP_SUM, &type_int},
    {"sum", OP_SUM, &type_double},
    {"sum", OP_SUM, &type_long_long},
    {"sum", OP_SUM, &type_float},
    {"prod", OP_PROD, &type_int},
    {"prod", OP_PROD, &type_double},
    {"prod", OP_PROD, &type_long_long},
    {"prod", OP_PROD, &type_float},
    {"max", OP_MAX, &type_int},
    {"max", OP_MAX, &type_double},
    {"max", OP_MAX, &type_long_long},
    {"max", OP_MAX, &type_float},
    {"min", OP_MIN, &type_int},
    {"min", OP_MIN, &type_double},
    {"min", OP_MIN, &type_long_long},
    {"min", OP_MIN, &type_float},
    {"land", OP_LAND, &type_int},
    {"land", OP_LAND, &type_long_long},
    {"lor", OP_LOR, &type_int},
    {"lor", OP_LOR, &type_long_long},
    {"lxor", OP_LXOR, &type_int},
    {"lxor", OP_LXOR, &type_long_long},
    {"band", OP_BAND, &type_int},
    {"band", OP_BAND, &type_long_long},
    {"band", OP_BAND, &type_byte},
    {"bor", OP_BOR, &type_int},
    {"bor", OP_BOR, &type_long_long},
    {"bor", OP_BOR, &type_byte},
    {"bxor", OP_BXOR, &type_int},
    {"bxor", OP_BXOR, &type_long_long},
    {"bxor", OP_BXOR, &type_byte},
    {"maxloc", OP_MAXLOC, &type_2int},
    {"maxloc", OP_MAXLOC, &type_double_int},
    {"minloc", OP_MINLOC, &type_2int},
    {"minloc", OP_MINLOC, &type_double_int},
    {"user_commutative", OP_USER_COMMUTATIVE, &type_struct},
    {"user_commutative", OP_USER_COMMUTATIVE, &type_vector},
    {"user_matrix", OP_USER_MATRIX, &type_matrix},
};
enum { OP_CASE_COUNT = sizeof op_cases / sizeof op_cases[0] };
static const struct op_case *const matrix_case = &op_cases[OP_CASE_COUNT - 1];
static const struct op_case *const sum_int_case = &op_cases[0];

static MPI_Op mpi_op(enum op_id id)
{
    static const MPI_Op builtin[] = {
        [OP_SUM] = MPI_SUM,       [OP_PROD] = MPI_PROD,
        [OP_MAX] = MPI_MAX,       [OP_MIN] = MPI_MIN,
        [OP_LAND] = MPI_LAND,     [OP_LOR] = MPI_LOR,
        [OP_LXOR] = MPI_LXOR,     [OP_BAND] = MPI_BAND,
        [OP_BOR] = MPI_BOR,       [OP_BXOR] = MPI_BXOR,
        [OP_MAXLOC] = MPI_MAXLOC, [OP_MINLOC] = MPI_MINLOC,
    };
    if (id == OP_USER_COMMUTATIVE)
        return user_commutative_op;
    if (id == OP_USER_MATRIX)
        return user_matrix_op;
    return builtin[id];
}

/* One basic value: integers (of any kind, and bit patterns) in i,
 * floating-point values in d. */
struct scalar {
    long long i;
    double d;
};

/* One element: a scalar per field. */
struct element {
    struct scalar field[4];
};

static int is_float_kind(enum kind kind)
{
    return kind == K_DOUBLE || kind == K_FLOAT;
}

static struct scalar read_scalar(const unsigned char *p, enum kind kind)
{
    struct scalar s = {0, 0.0};
    switch (kind) {
    case K_INT: {
        int32_t v;
        memcpy(&v, p, 4);
        s.i = v;
        break;
    }
    case K_DOUBLE: memcpy(&s.d, p, 8); break;
    case K_CHAR:
    case K_BYTE: s.i = *p; break;
    case K_LONG_LONG: memcpy(&s.i, p, 8); break;
    case K_FLOAT: {
        float v;
        memcpy(&v, p, 4);
        s.d = v;
        break;
    }
    }
    return s;
}

static void write_scalar(unsigned char *p, enum kind kind, struct scalar s)
{
    switch (kind) {
    case K_INT: {
        /* Through uint32_t: negative values and bit patterns alike keep
         * their low 32 bits, with no implementation-defined conversion. */
        uint32_t v = (uint32_t)(unsigned long long)s.i;
        memcpy(p, &v, 4);
        break;
    }
    case K_DOUBLE: memcpy(p, &s.d, 8); break;
    case K_CHAR:
    case K_BYTE: *p = (unsigned char)(unsigned long long)s.i; break;
    case K_LONG_LONG: memcpy(p, &s.i, 8); break;
    case K_FLOAT: {
        float v = (float)s.d;
        memcpy(p, &v, 4);
        break;
    }
    }
}

static struct element read_element(const struct test_type *t,
                                   const unsigned char *p)
{
    struct element e;
    memset(&e, 0, sizeof e);
    for (int f = 0; f < t->field_count; f++)
        e.field[f] = read_scalar(p + t->fields[f].offset, t->fields[f].kind);
    return e;
}

static void write_element(const struct test_type *t, unsigned char *p,
                          const struct element *e)
{
    for (int f = 0; f < t->field_count; f++)
        write_scalar(p + t->fields[f].offset, t->fields[f].kind, e->field[f]);
}

/* Contribution of communicator rank `rank` to element `index`, in a range
 * where the op stays exact (no overflow, no rounding) in any order. */
static struct element contribution(const struct op_case *oc, int rank,
                                   long index)
{
    struct element e;
    memset(&e, 0, sizeof e);
    uint64_t h = seed_of(1000 + (int)oc->id, (int)oc->type->fields[0].kind,
                         rank, (int)index);
    enum kind kind = oc->type->fields[0].kind;
    struct scalar *s = &e.field[0];
    switch (oc->id) {
    case OP_SUM:
        s->i = (long long)(h % 2001) - 1000;
        s->d = (double)s->i / 2.0;
        break;
    case OP_PROD: {
        static const int factors[] = {2, -1, 1, -2, 1, 1};
        s->i = factors[h % 6];
        s->d = (double)s->i;
        break;
    }
    case OP_MAX:
    case OP_MIN:
        if (kind == K_INT)
            s->i = (long long)(h >> 32) - 2147483648ll;
        else
            s->i = (long long)(h >> 1) - (1ll << 62);
        s->d = kind == K_FLOAT ? (double)(int32_t)(h >> 40) / 16.0
                               : (double)(int64_t)(h >> 12) / 1024.0 - 1e12;
        break;
    case OP_LAND:
    case OP_LOR:
    case OP_LXOR: {
        static const int truth[] = {0, 1, 7, -3, 1, 5};
        s->i = truth[h % 6];
        break;
    }
    case OP_BAND:
    case OP_BOR:
    case OP_BXOR: {
        /* Bit patterns, dense for AND and sparse for OR so results are not
         * all zeros or all ones. */
        uint64_t bits = oc->id == OP_BAND  ? h | (h >> 7)
                        : oc->id == OP_BOR ? h & (h >> 9)
                                           : h;
        s->i = (long long)(bits >> 1);
        if (kind == K_INT)
            s->i &= 0xffffffffll;
        else if (kind == K_BYTE)
            s->i &= 0xff;
        break;
    }
    case OP_MAXLOC:
    case OP_MINLOC:
        /* Few distinct values, so ties are common; locations not ordered by
         * rank, so "lowest location wins" is really exercised. */
        s->i = (long long)(h % 3);
        s->d = (double)s->i + 0.25;
        e.field[1].i = (rank * 5 + index) % 7;
        break;
    case OP_USER_COMMUTATIVE:
        if (oc->type == &type_struct) {
            e.field[0].i = (long long)(h % 2001) - 1000;
            e.field[1].d = (double)(int64_t)(mix(h) >> 12) / 1024.0;
            e.field[2].i = (long long)((h >> 8) & 0xffffffff);
        } else {
            e.field[0].i = (long long)(h % 2001) - 1000;
            e.field[1].i = (long long)(mix(h) >> 32) - 2147483648ll;
        }
        break;
    case OP_USER_MATRIX:
        for (int f = 0; f < 4; f++)
            e.field[f].i = (long long)((h >> (8 * f)) % 5);
        break;
    }
    return e;
}

static struct scalar builtin_combine(enum op_id id, enum kind kind,
                                     struct scalar a, struct scalar b)
{
    struct scalar r = a;
    if (is_float_kind(kind)) {
        switch (id) {
        case OP_SUM: r.d = a.d + b.d; break;
        case OP_PROD: r.d = a.d * b.d; break;
        case OP_MAX: r.d = a.d > b.d ? a.d : b.d; break;
        case OP_MIN: r.d = a.d < b.d ? a.d : b.d; break;
        default: fail("op %d on a floating type", (int)id);
        }
        if (kind == K_FLOAT)
            r.d = (float)r.d;
        return r;
    }
    switch (id) {
    case OP_SUM: r.i = a.i + b.i; break;
    case OP_PROD: r.i = a.i * b.i; break;
    case OP_MAX: r.i = a.i > b.i ? a.i : b.i; break;
    case OP_MIN: r.i = a.i < b.i ? a.i : b.i; break;
    case OP_LAND: r.i = a.i && b.i; break;
    case OP_LOR: r.i = a.i || b.i; break;
    case OP_LXOR: r.i = !a.i != !b.i; break;
    case OP_BAND: r.i = a.i & b.i; break;
    case OP_BOR: r.i = a.i | b.i; break;
    case OP_BXOR: r.i = a.i ^ b.i; break;
    default: fail("op %d on an integer type", (int)id);
    }
    return r;
}

/* a o b, where a holds the lower ranks' part: the order MPI defines for
 * non-commutative ops. */
static struct element combine(const struct op_case *oc, const struct element *a,
                              const struct element *b)
{
    struct element r = *a;
    const struct test_type *t = oc->type;
    switch (oc->id) {
    case OP_MAXLOC:
    case OP_MINLOC: {
        int floating = is_float_kind(t->fields[0].kind);
        double va = floating ? a->field[0].d : (double)a->field[0].i;
        double vb = floating ? b->field[0].d : (double)b->field[0].i;
        int b_wins = oc->id == OP_MAXLOC ? vb > va : vb < va;
        if (b_wins)
            r = *b;
        else if (va == vb && b->field[1].i < a->field[1].i)
            r.field[1] = b->field[1];
        break;
    }
    case OP_USER_COMMUTATIVE:
        if (t == &type_struct) {
            r.field[0].i = a->field[0].i + b->field[0].i;
            r.field[1].d =
                a->field[1].d > b->field[1].d ? a->field[1].d : b->field[1].d;
            r.field[2].i = a->field[2].i ^ b->field[2].i;
        } else {
            r.field[0].i = a->field[0].i + b->field[0].i;
            r.field[1].i =
                a->field[1].i < b->field[1].i ? a->field[1].i : b->field[1].i;
        }
        break;
    case OP_USER_MATRIX: {
        /* Row-major 2x2 product modulo 2^32. */
        uint32_t x[4], y[4];
        for (int f = 0; f < 4; f++) {
            x[f] = (uint32_t)(unsigned long long)a->field[f].i;
            y[f] = (uint32_t)(unsigned long long)b->field[f].i;
        }
        uint32_t z[4] = {x[0] * y[0] + x[1] * y[2], x[0] * y[1] + x[1] * y[3],
                         x[2] * y[0] + x[3] * y[2], x[2] * y[1] + x[3] * y[3]};
        for (int f = 0; f < 4; f++)
            r.field[f].i = (long long)z[f];
        break;
    }
    default:
        for (int f = 0; f < t->field_count; f++)
            r.field[f] = builtin_combine(oc->id, t->fields[f].kind, a->field[f],
                                         b->field[f]);
    }
    return r;
}

/* MPI calls user functions as inoutvec[i] = invec[i] o inoutvec[i]. */
static void apply_user_op(const struct op_case *oc, void *in, void *inout,
                          int count)
{
    const struct test_type *t = oc->type;
    for (int i = 0; i < count; i++) {
        unsigned char *x = (unsigned char *)in + (size_t)i * t->extent;
        unsigned char *y = (unsigned char *)inout + (size_t)i * t->extent;
        struct element a = read_element(t, x), b = read_element(t, y);
        struct element r = combine(oc, &a, &b);
        write_element(t, y, &r);
    }
}

static void user_commutative_function(void *in, void *inout, int *count,
                                      MPI_Datatype *datatype)
{
    /* The op serves two datatypes; the call must pass the user's own. */
    for (int c = 0; c < OP_CASE_COUNT; c++)
        if (op_cases[c].id == OP_USER_COMMUTATIVE &&
            op_cases[c].type->datatype == *datatype) {
            apply_user_op(&op_cases[c], in, inout, *count);
            return;
        }
    fail("user commutative op called with a datatype that is not the one "
         "passed to the collective");
}

static void user_matrix_function(void *in, void *inout, int *count,
                                 MPI_Datatype *datatype)
{
    CHECK(*datatype == type_matrix.datatype,
          "user matrix op called with a datatype that is not the one passed "
          "to the collective");
    apply_user_op(matrix_case, in, inout, *count);
}

/* Writes the contributions of `rank` to elements [first, first + count). */
static void put_contributions(const struct op_case *oc, unsigned char *base,
                              long first, int count, int rank)
{
    for (int e = 0; e < count; e++) {
        struct element value = contribution(oc, rank, first + e);
        write_element(oc->type, base + (size_t)e * oc->type->extent, &value);
    }
}

/* Writes, for elements [first, first + count), the reduction of the
 * contributions of ranks low..high in rank order. */
static void put_reduction(const struct op_case *oc, unsigned char *base,
                          long first, int count, int low, int high)
{
    for (int e = 0; e < count; e++) {
        struct element acc = contribution(oc, low, first + e);
        for (int r = low + 1; r <= high; r++) {
            struct element next = contribution(oc, r, first + e);
            acc = combine(oc, &acc, &next);
        }
        write_element(oc->type, base + (size_t)e * oc->type->extent, &acc);
    }
}

/* ---- checking ----------------------------------------------------------- */

static void check_bytes(const char *what, const unsigned char *got,
                        const unsigned char *want, size_t bytes,
                        const struct test_type *t)
{
    if (memcmp(got, want, bytes) == 0)
        return;
    size_t i = 0;
    while (got[i] == want[i])
        i++;
    size_t element = i / t->extent, offset = i % t->extent;
    fail("%s: byte %zu (element %zu, offset %zu%s) is 0x%02x, want 0x%02x%s",
         what, i, element, offset, is_hole(t, offset) ? ", a hole" : "", got[i],
         want[i],
         want[i] == RECV_SENTINEL ? " (written where nothing should be)" : "");
}

/* ---- communicators under test ------------------------------------------ */

struct comm_under_test {
    const char *name;
    MPI_Comm comm;
    int index;
    int size;
    int rank;
};

enum { WORLD, DUP, REVERSED, PARITY, INTERLEAVED, COMM_COUNT };
static struct comm_under_test comms[COMM_COUNT];

static void setup_comms(void)
{
    static const char *const names[COMM_COUNT] = {[WORLD] = "world",
                                                  [DUP] = "dup",
                                                  [REVERSED] = "reversed",
                                                  [PARITY] = "parity",
                                                  [INTERLEAVED] =
                                                      "evens_then_odds"};
    MPI_Comm handles[COMM_COUNT];
    handles[WORLD] = MPI_COMM_WORLD;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &handles[DUP]));
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - 1 - world_rank,
                             &handles[REVERSED]));
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank,
                             &handles[PARITY]));
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0,
                             (world_rank % 2) * world_size + world_rank,
                             &handles[INTERLEAVED]));
    for (int c = 0; c < COMM_COUNT; c++) {
        comms[c].name = names[c];
        comms[c].comm = handles[c];
        comms[c].index = c;
        MPI_CHECK(MPI_Comm_size(handles[c], &comms[c].size));
        MPI_CHECK(MPI_Comm_rank(handles[c], &comms[c].rank));
    }
    /* The expected rank of this process in each, from the split rules. */
    int want_reversed = world_size - 1 - world_rank;
    int evens = (world_size + 1) / 2;
    int want_interleaved =
        world_rank % 2 ? evens + world_rank / 2 : world_rank / 2;
    CHECK(comms[REVERSED].rank == want_reversed &&
              comms[PARITY].rank == world_rank / 2 &&
              comms[INTERLEAVED].rank == want_interleaved,
          "split ranks %d %d %d, want %d %d %d", comms[REVERSED].rank,
          comms[PARITY].rank, comms[INTERLEAVED].rank, want_reversed,
          world_rank / 2, want_interleaved);
}

/* Large transfers once per collective on these two. */
static int runs_large(const struct comm_under_test *c)
{
    return c->index == WORLD || c->index == INTERLEAVED;
}

/* ---- variants ------------------------------------------------------------ */

struct variant {
    int k; /* variant number, unique across communicators: selects data */
    const struct test_type *type;
    const struct op_case *op;
    int count;
    int root;
    int in_place;
};

static void describe(const struct comm_under_test *c, const struct variant *v,
                     const char *extra)
{
    const char *type_name = v->op     ? v->op->type->name
                            : v->type ? v->type->name
                                      : "per-pair";
    snprintf(call_description, sizeof call_description,
             "comm=%s size=%d%s%s type=%s count=%d root=%d%s%s%s", c->name,
             c->size, v->op ? " op=" : "", v->op ? v->op->name : "", type_name,
             v->count, v->root, v->in_place ? " in_place" : "",
             extra[0] ? " " : "", extra);
    if (trace) {
        printf("TRACE %s: rank %d: %s\n", case_name(), world_rank,
               call_description);
        fflush(stdout);
    }
}

/* Variants of one collective on one communicator: at least `wanted`
 * across all communicators, and at least one per root. */
static int variant_count(const struct comm_under_test *c, int wanted)
{
    return max_int((wanted + COMM_COUNT - 1) / COMM_COUNT, c->size);
}

/* The variant number k = base + j * COMM_COUNT + c->index is unique across
 * the communicators of one collective; `base` shifts each collective to
 * other combinations.  Root j % size visits every root; in-place flips
 * between a root's visits. */
static struct variant base_variant(const struct comm_under_test *c, int j,
                                   int base)
{
    struct variant v;
    memset(&v, 0, sizeof v);
    v.k = base + j * COMM_COUNT + c->index;
    v.root = j % c->size;
    v.in_place = (j % c->size + j / c->size + c->index) % 2;
    return v;
}

enum { DATA_VARIANTS = 20 };
/* Variant number of the large transfers: apart from all the others. */
enum { LARGE_VARIANT = 1000000 };

/* Type k % 8 with count (k + k / 8) % 4: any 8 consecutive k give every
 * type, any 4 every count, and 32 consecutive every pair; the collectives'
 * bases (7 apart) spread the pairs over the data-movement collectives. */
static struct variant data_variant(const struct comm_under_test *c, int j,
                                   int collective)
{
    struct variant v = base_variant(c, j, collective * 7);
    v.type = data_types[v.k % DATA_TYPE_COUNT];
    v.count = counts[(v.k + v.k / DATA_TYPE_COUNT) % COUNT_CHOICES];
    return v;
}

/* Reductions: (op, type) pair k % 38 with a count that rotates with the
 * collective; `rotation` variants of those, then one more call with the
 * non-commutative op on every communicator, at the last root. */
static struct variant reduce_variant(const struct comm_under_test *c, int j,
                                     int collective, int rotation)
{
    struct variant v = base_variant(c, j, collective * 20);
    if (j < rotation) {
        v.op = &op_cases[v.k % OP_CASE_COUNT];
        v.count = counts[(v.k + collective) % COUNT_CHOICES];
    } else {
        v.op = matrix_case;
        v.count = counts[1 + (c->index + collective) % (COUNT_CHOICES - 1)];
        v.root = c->size - 1;
    }
    return v;
}

/* ---- collectives -------------------------------------------------------- */

/* Collective numbers, part of every data seed. */
enum collective {
    C_BARRIER,
    C_BCAST,
    C_REDUCE,
    C_ALLREDUCE,
    C_REDUCE_SCATTER,
    C_REDUCE_SCATTER_BLOCK,
    C_SCAN,
    C_EXSCAN,
    C_GATHER,
    C_GATHERV,
    C_SCATTER,
    C_SCATTERV,
    C_ALLGATHER,
    C_ALLGATHERV,
    C_ALLTOALL,
    C_ALLTOALLV,
    C_ALLTOALLW
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void run_barrier(const struct comm_under_test *c)
{
    snprintf(call_description, sizeof call_description, "comm=%s size=%d",
             c->name, c->size);
    MPI_CHECK(COLL(MPI_Barrier, MPI_Ibarrier, MPI_Barrier_init, c->comm));
    /* The world's barrier is timed by the runtime tests already. */
    if (c->size < 2 || c->index != INTERLEAVED)
        return;
    /* The last rank arrives 100 ms late; nobody may leave before.  The
     * threshold is half that, as the ranks' start skew on a busy machine
     * shortens the measured wait. */
    MPI_CHECK(COLL(MPI_Barrier, MPI_Ibarrier, MPI_Barrier_init, c->comm));
    if (c->rank == c->size - 1) {
        struct timespec pause = {0, 100 * 1000000L};
        nanosleep(&pause, NULL);
    }
    double start = now_ms();
    MPI_CHECK(COLL(MPI_Barrier, MPI_Ibarrier, MPI_Barrier_init, c->comm));
    double waited = now_ms() - start;
    CHECK(c->rank == c->size - 1 || waited >= 50.0,
          "left the barrier after %.1f ms while the last rank slept 100 ms",
          waited);
}

static void bcast_one(const struct comm_under_test *c,
                      const struct test_type *t, int count, int root, int k)
{
    size_t bytes = (size_t)(count + 1) * t->extent;
    uint64_t seed = data_seed(C_BCAST, k, root, -1);
    unsigned char *buffer, *want;
    if (c->rank == root) {
        buffer = filled(bytes, SEND_SENTINEL);
        put_stream(t, buffer, count, seed);
        want = copy_of(buffer, bytes);
    } else {
        buffer = filled(bytes, RECV_SENTINEL);
        want = filled(bytes, RECV_SENTINEL);
        put_stream(t, want, count, seed);
    }
    MPI_CHECK(COLL(MPI_Bcast, MPI_Ibcast, MPI_Bcast_init, buffer, count,
                   t->datatype, root, c->comm));
    check_bytes("buffer", buffer, want, bytes, t);
    free(buffer);
    free(want);
}

static void run_bcast(const struct comm_under_test *c)
{
    for (int j = 0; j < variant_count(c, DATA_VARIANTS); j++) {
        struct variant v = data_variant(c, j, C_BCAST);
        v.in_place = 0;
        describe(c, &v, "");
        bcast_one(c, v.type, v.count, v.root, v.k);
    }
    if (runs_large(c)) {
        struct variant v = {0, &type_double, NULL, 32768, c->size - 1, 0};
        describe(c, &v, "(256 KiB)");
        bcast_one(c, v.type, v.count, v.root, LARGE_VARIANT);
    }
}

/* Reduce, Allreduce, Scan and Exscan: every rank contributes `count`
 * elements and receives `count` (Reduce: only the root). */
static void reduce_like_one(const struct comm_under_test *c,
                            enum collective which, const struct variant *v)
{
    const struct op_case *oc = v->op;
    const struct test_type *t = oc->type;
    MPI_Op op = mpi_op(oc->id);
    size_t bytes = (size_t)(v->count + 1) * t->extent;
    int receives = which != C_REDUCE || c->rank == v->root;
    int in_place = v->in_place && receives;

    unsigned char *send = filled(bytes, SEND_SENTINEL);
    put_contributions(oc, send, 0, v->count, c->rank);
    unsigned char *send_copy = copy_of(send, bytes);
    unsigned char *recv = NULL;
    if (receives) {
        recv = filled(bytes, RECV_SENTINEL);
        if (in_place)
            put_contributions(oc, recv, 0, v->count, c->rank);
    }
    const void *send_arg = in_place ? MPI_IN_PLACE : (const void *)send;
    switch (which) {
    case C_REDUCE:
        MPI_CHECK(COLL(MPI_Reduce, MPI_Ireduce, MPI_Reduce_init, send_arg, recv,
                       v->count, t->datatype, op, v->root, c->comm));
        break;
    case C_ALLREDUCE:
        MPI_CHECK(COLL(MPI_Allreduce, MPI_Iallreduce, MPI_Allreduce_init,
                       send_arg, recv, v->count, t->datatype, op, c->comm));
        break;
    case C_SCAN:
        MPI_CHECK(COLL(MPI_Scan, MPI_Iscan, MPI_Scan_init, send_arg, recv,
                       v->count, t->datatype, op, c->comm));
        break;
    case C_EXSCAN:
        MPI_CHECK(COLL(MPI_Exscan, MPI_Iexscan, MPI_Exscan_init, send_arg, recv,
                       v->count, t->datatype, op, c->comm));
        break;
    default: fail("not a reduce-like collective: %d", (int)which);
    }
    check_bytes("send buffer changed", send, send_copy, bytes, t);
    int low = 0, high = c->size - 1;
    if (which == C_SCAN)
        high = c->rank;
    if (which == C_EXSCAN)
        high = c->rank - 1;
    /* Exscan leaves rank 0's buffer undefined. */
    if (receives && high >= low) {
        unsigned char *want = filled(bytes, RECV_SENTINEL);
        put_reduction(oc, want, 0, v->count, low, high);
        check_bytes("result", recv, want, bytes, t);
        free(want);
    }
    free(send);
    free(send_copy);
    free(recv);
}

/* Reduce and Allreduce run every (op, type) pair; the other reduction
 * collectives a rotating share of them. */
static void
run_reduce_variants(const struct comm_under_test *c, enum collective which,
                    void (*one)(const struct comm_under_test *, enum collective,
                                const struct variant *))
{
    int every_pair = which == C_REDUCE || which == C_ALLREDUCE;
    int rotation = variant_count(c, every_pair ? OP_CASE_COUNT : 20);
    for (int j = 0; j <= rotation; j++) {
        struct variant v = reduce_variant(c, j, (int)which, rotation);
        describe(c, &v, "");
        one(c, which, &v);
    }
}

/* MPICH 4.0.2 (Debian 12) crashes in MPI_Reduce with MPI_IN_PLACE at a
 * non-zero root once a built-in op's message exceeds 2 KiB: its
 * reduce-scatter-gather algorithm copies from the MPI_IN_PLACE address
 * (pmodels/mpich#6540, fixed in 4.1.2).  Those calls run without
 * MPI_IN_PLACE; small messages and user ops keep it at every root. */
static int hits_mpich_reduce_in_place_bug(const struct variant *v)
{
    int size;
    MPI_CHECK(MPI_Type_size(v->op->type->datatype, &size));
    return v->in_place && v->root != 0 && v->op->id < OP_USER_COMMUTATIVE &&
           (long)v->count * size > 2048;
}

static void reduce_one(const struct comm_under_test *c, enum collective which,
                       const struct variant *v)
{
    struct variant adjusted = *v;
    if (hits_mpich_reduce_in_place_bug(v)) {
        adjusted.in_place = 0;
        describe(c, &adjusted, "(in place avoided: MPICH bug)");
    }
    reduce_like_one(c, which, &adjusted);
}

static void run_reduce(const struct comm_under_test *c)
{
    run_reduce_variants(c, C_REDUCE, reduce_one);
}

static void run_allreduce(const struct comm_under_test *c)
{
    run_reduce_variants(c, C_ALLREDUCE, reduce_like_one);
    if (runs_large(c)) {
        struct variant v = {0, NULL, sum_int_case, 65536, 0, 0};
        describe(c, &v, "(256 KiB)");
        reduce_like_one(c, C_ALLREDUCE, &v);
    }
}

static void run_scan(const struct comm_under_test *c)
{
    run_reduce_variants(c, C_SCAN, reduce_like_one);
}

static void run_exscan(const struct comm_under_test *c)
{
    run_reduce_variants(c, C_EXSCAN, reduce_like_one);
}

/* Reduce_scatter (irregular counts, zeros included) and
 * Reduce_scatter_block. */
static void reduce_scatter_one(const struct comm_under_test *c,
                               enum collective which, const struct variant *v)
{
    const struct op_case *oc = v->op;
    const struct test_type *t = oc->type;
    int n = c->size;
    int *recv_counts = xmalloc(sizeof *recv_counts * n);
    long total = 0, my_first = 0;
    for (int q = 0; q < n; q++) {
        recv_counts[q] = which == C_REDUCE_SCATTER_BLOCK
                             ? v->count
                             : v->count * ((q + v->k) % 3);
        if (q == c->rank)
            my_first = total;
        total += recv_counts[q];
    }
    int mine = recv_counts[c->rank];
    size_t total_bytes = (size_t)(total + 1) * t->extent;
    size_t mine_bytes = (size_t)(mine + 1) * t->extent;

    unsigned char *send = filled(total_bytes, SEND_SENTINEL);
    put_contributions(oc, send, 0, (int)total, c->rank);
    unsigned char *send_copy = copy_of(send, total_bytes);
    unsigned char *recv;
    if (v->in_place) {
        recv = filled(total_bytes, RECV_SENTINEL);
        put_contributions(oc, recv, 0, (int)total, c->rank);
    } else {
        recv = filled(mine_bytes, RECV_SENTINEL);
    }
    const void *send_arg = v->in_place ? MPI_IN_PLACE : (const void *)send;
    if (which == C_REDUCE_SCATTER_BLOCK)
        MPI_CHECK(COLL(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block,
                       MPI_Reduce_scatter_block_init, send_arg, recv, v->count,
                       t->datatype, mpi_op(oc->id), c->comm));
    else
        MPI_CHECK(COLL(MPI_Reduce_scatter, MPI_Ireduce_scatter,
                       MPI_Reduce_scatter_init, send_arg, recv, recv_counts,
                       t->datatype, mpi_op(oc->id), c->comm));
    check_bytes("send buffer changed", send, send_copy, total_bytes, t);
    unsigned char *want = filled(mine_bytes, RECV_SENTINEL);
    put_reduction(oc, want, my_first, mine, 0, n - 1);
    /* In place, only my block is defined afterwards: no guard to check. */
    check_bytes("result", recv, want,
                v->in_place ? (size_t)mine * t->extent : mine_bytes, t);
    free(want);
    free(send);
    free(send_copy);
    free(recv);
    free(recv_counts);
}

static void run_reduce_scatter(const struct comm_under_test *c)
{
    run_reduce_variants(c, C_REDUCE_SCATTER, reduce_scatter_one);
}

static void run_reduce_scatter_block(const struct comm_under_test *c)
{
    run_reduce_variants(c, C_REDUCE_SCATTER_BLOCK, reduce_scatter_one);
}

/* Irregular block sizes for v-collectives: 0, 1 or 2 times the scale. */
static void irregular_counts(int n, int scale, int k, int *block_counts)
{
    for (int q = 0; q < n; q++)
        block_counts[q] = scale * ((q + k) % 3);
}

static void uniform_counts(int n, int count, int *block_counts)
{
    for (int q = 0; q < n; q++)
        block_counts[q] = count;
}

enum { BLOCKS_IN_RANK_ORDER = -2, BLOCKS_REVERSED = -1 };

/* Displacements (in elements) for blocks stored in rank order, reversed,
 * or rotated to start at rank `order` (>= 0), each followed by `gap` unused
 * elements.  Returns the buffer length in elements. */
static long place_blocks(int n, const int *block_counts, int order, int gap,
                         int *displs)
{
    long position = 0;
    for (int i = 0; i < n; i++) {
        int q = order == BLOCKS_IN_RANK_ORDER ? i
                : order == BLOCKS_REVERSED    ? n - 1 - i
                                              : (order + i) % n;
        displs[q] = (int)position;
        position += block_counts[q] + gap;
    }
    return position;
}

static void put_blocks(const struct test_type *t, unsigned char *base, int n,
                       const int *block_counts, const int *displs,
                       enum collective which, int k, int sender_is_block,
                       int other)
{
    for (int q = 0; q < n; q++) {
        uint64_t seed = sender_is_block ? data_seed(which, k, q, other)
                                        : data_seed(which, k, other, q);
        put_stream(t, base + (size_t)displs[q] * t->extent, block_counts[q],
                   seed);
    }
}

/* Gather, Gatherv, Allgather, Allgatherv: rank q sends its block (which
 * depends only on q) to the root or to everyone. */
static void gather_like_one(const struct comm_under_test *c,
                            enum collective which, const struct variant *v)
{
    const struct test_type *t = v->type;
    int n = c->size;
    int irregular = which == C_GATHERV || which == C_ALLGATHERV;
    int everyone = which == C_ALLGATHER || which == C_ALLGATHERV;
    int receives = everyone || c->rank == v->root;
    int in_place = v->in_place && receives;
    int *block_counts = xmalloc(sizeof *block_counts * n);
    int *displs = xmalloc(sizeof *displs * n);
    if (irregular)
        irregular_counts(n, v->count, v->k, block_counts);
    else
        uniform_counts(n, v->count, block_counts);
    long total =
        irregular
            ? place_blocks(n, block_counts, BLOCKS_REVERSED, 1, displs)
            : place_blocks(n, block_counts, BLOCKS_IN_RANK_ORDER, 0, displs);
    int mine = block_counts[c->rank];
    size_t send_bytes = (size_t)(mine + 1) * t->extent;
    size_t recv_bytes = (size_t)(total + 1) * t->extent;

    unsigned char *send = filled(send_bytes, SEND_SENTINEL);
    put_stream(t, send, mine, data_seed(which, v->k, c->rank, -1));
    unsigned char *send_copy = copy_of(send, send_bytes);
    unsigned char *recv = NULL;
    if (receives) {
        recv = filled(recv_bytes, RECV_SENTINEL);
        if (in_place)
            put_stream(t, recv + (size_t)displs[c->rank] * t->extent, mine,
                       data_seed(which, v->k, c->rank, -1));
    }
    /* In place, the send count and type are ignored; 0 and
     * MPI_DATATYPE_NULL catch an implementation that reads them. */
    const void *send_arg = in_place ? MPI_IN_PLACE : (const void *)send;
    int send_count = in_place ? 0 : mine;
    MPI_Datatype send_type = in_place ? MPI_DATATYPE_NULL : t->datatype;
    switch (which) {
    case C_GATHER:
        MPI_CHECK(COLL(MPI_Gather, MPI_Igather, MPI_Gather_init, send_arg,
                       send_count, send_type, recv, v->count, t->datatype,
                       v->root, c->comm));
        break;
    case C_GATHERV:
        MPI_CHECK(COLL(MPI_Gatherv, MPI_Igatherv, MPI_Gatherv_init, send_arg,
                       send_count, send_type, recv, block_counts, displs,
                       t->datatype, v->root, c->comm));
        break;
    case C_ALLGATHER:
        MPI_CHECK(COLL(MPI_Allgather, MPI_Iallgather, MPI_Allgather_init,
                       send_arg, send_count, send_type, recv, v->count,
                       t->datatype, c->comm));
        break;
    case C_ALLGATHERV:
        MPI_CHECK(COLL(MPI_Allgatherv, MPI_Iallgatherv, MPI_Allgatherv_init,
                       send_arg, send_count, send_type, recv, block_counts,
                       displs, t->datatype, c->comm));
        break;
    default: fail("not a gather: %d", (int)which);
    }
    check_bytes("send buffer changed", send, send_copy, send_bytes, t);
    if (receives) {
        unsigned char *want = filled(recv_bytes, RECV_SENTINEL);
        put_blocks(t, want, n, block_counts, displs, which, v->k, 1, -1);
        check_bytes("gathered", recv, want, recv_bytes, t);
        free(want);
    }
    free(send);
    free(send_copy);
    free(recv);
    free(block_counts);
    free(displs);
}

static void
run_data_variants(const struct comm_under_test *c, enum collective which,
                  void (*one)(const struct comm_under_test *, enum collective,
                              const struct variant *))
{
    for (int j = 0; j < variant_count(c, DATA_VARIANTS); j++) {
        struct variant v = data_variant(c, j, which);
        describe(c, &v, "");
        one(c, which, &v);
    }
}

static void run_gather(const struct comm_under_test *c)
{
    run_data_variants(c, C_GATHER, gather_like_one);
}

static void run_gatherv(const struct comm_under_test *c)
{
    run_data_variants(c, C_GATHERV, gather_like_one);
}

static void run_allgather(const struct comm_under_test *c)
{
    run_data_variants(c, C_ALLGATHER, gather_like_one);
}

static void run_allgatherv(const struct comm_under_test *c)
{
    run_data_variants(c, C_ALLGATHERV, gather_like_one);
}

/* Scatter and Scatterv: the root sends block q to rank q. */
static void scatter_like_one(const struct comm_under_test *c,
                             enum collective which, const struct variant *v)
{
    const struct test_type *t = v->type;
    int n = c->size;
    int irregular = which == C_SCATTERV;
    int is_root = c->rank == v->root;
    int in_place = v->in_place && is_root;
    int *block_counts = xmalloc(sizeof *block_counts * n);
    int *displs = xmalloc(sizeof *displs * n);
    if (irregular)
        irregular_counts(n, v->count, v->k, block_counts);
    else
        uniform_counts(n, v->count, block_counts);
    long total =
        irregular
            ? place_blocks(n, block_counts, (v->root + 1) % n, 1, displs)
            : place_blocks(n, block_counts, BLOCKS_IN_RANK_ORDER, 0, displs);
    int mine = block_counts[c->rank];
    size_t send_bytes = (size_t)(total + 1) * t->extent;
    size_t recv_bytes = (size_t)(mine + 1) * t->extent;

    unsigned char *send = NULL, *send_copy = NULL;
    if (is_root) {
        send = filled(send_bytes, SEND_SENTINEL);
        put_blocks(t, send, n, block_counts, displs, which, v->k, 0, v->root);
        send_copy = copy_of(send, send_bytes);
    }
    unsigned char *recv = in_place ? NULL : filled(recv_bytes, RECV_SENTINEL);
    void *recv_arg = in_place ? MPI_IN_PLACE : (void *)recv;
    int recv_count = in_place ? 0 : mine;
    MPI_Datatype recv_type = in_place ? MPI_DATATYPE_NULL : t->datatype;
    if (which == C_SCATTER)
        MPI_CHECK(COLL(MPI_Scatter, MPI_Iscatter, MPI_Scatter_init, send,
                       v->count, t->datatype, recv_arg, recv_count, recv_type,
                       v->root, c->comm));
    else
        MPI_CHECK(COLL(MPI_Scatterv, MPI_Iscatterv, MPI_Scatterv_init, send,
                       block_counts, displs, t->datatype, recv_arg, recv_count,
                       recv_type, v->root, c->comm));
    if (is_root)
        check_bytes("send buffer changed", send, send_copy, send_bytes, t);
    if (!in_place) {
        unsigned char *want = filled(recv_bytes, RECV_SENTINEL);
        put_stream(t, want, mine, data_seed(which, v->k, v->root, c->rank));
        check_bytes("received", recv, want, recv_bytes, t);
        free(want);
    }
    free(send);
    free(send_copy);
    free(recv);
    free(block_counts);
    free(displs);
}

static void run_scatter(const struct comm_under_test *c)
{
    run_data_variants(c, C_SCATTER, scatter_like_one);
}

static void run_scatterv(const struct comm_under_test *c)
{
    run_data_variants(c, C_SCATTERV, scatter_like_one);
}

/* Elements rank `from` sends to rank `to` in Alltoallv.  In place both
 * directions use the receive layout, so the count must be symmetric. */
static int pair_count(int scale, int from, int to, int k, int symmetric)
{
    return scale * (((symmetric ? from + to : 2 * from + to) + k) % 3);
}

/* Alltoall and Alltoallv. */
static void alltoall_like_one(const struct comm_under_test *c,
                              enum collective which, const struct variant *v)
{
    const struct test_type *t = v->type;
    int n = c->size, me = c->rank;
    int irregular = which == C_ALLTOALLV;
    int *send_counts = xmalloc(sizeof *send_counts * n);
    int *send_displs = xmalloc(sizeof *send_displs * n);
    int *recv_counts = xmalloc(sizeof *recv_counts * n);
    int *recv_displs = xmalloc(sizeof *recv_displs * n);
    for (int q = 0; q < n; q++) {
        send_counts[q] = irregular
                             ? pair_count(v->count, me, q, v->k, v->in_place)
                             : v->count;
        recv_counts[q] = irregular
                             ? pair_count(v->count, q, me, v->k, v->in_place)
                             : v->count;
    }
    /* Irregular: the send side stores blocks rotated, the receive side
     * reversed, both with gaps. */
    long send_total = place_blocks(
        n, send_counts, irregular ? (me + 1) % n : BLOCKS_IN_RANK_ORDER,
        irregular, send_displs);
    long recv_total = place_blocks(
        n, recv_counts, irregular ? BLOCKS_REVERSED : BLOCKS_IN_RANK_ORDER,
        irregular, recv_displs);
    size_t send_bytes = (size_t)(send_total + 1) * t->extent;
    size_t recv_bytes = (size_t)(recv_total + 1) * t->extent;

    unsigned char *send = filled(send_bytes, SEND_SENTINEL);
    put_blocks(t, send, n, send_counts, send_displs, which, v->k, 0, me);
    unsigned char *send_copy = copy_of(send, send_bytes);
    unsigned char *recv = filled(recv_bytes, RECV_SENTINEL);
    if (v->in_place)
        put_blocks(t, recv, n, recv_counts, recv_displs, which, v->k, 0, me);
    /* In place, the send arguments are ignored: pass 0 and nulls. */
    const void *send_arg = v->in_place ? MPI_IN_PLACE : (const void *)send;
    MPI_Datatype send_type = v->in_place ? MPI_DATATYPE_NULL : t->datatype;
    if (which == C_ALLTOALL)
        MPI_CHECK(COLL(MPI_Alltoall, MPI_Ialltoall, MPI_Alltoall_init, send_arg,
                       v->in_place ? 0 : v->count, send_type, recv, v->count,
                       t->datatype, c->comm));
    else
        MPI_CHECK(COLL(MPI_Alltoallv, MPI_Ialltoallv, MPI_Alltoallv_init,
                       send_arg, v->in_place ? NULL : send_counts,
                       v->in_place ? NULL : send_displs, send_type, recv,
                       recv_counts, recv_displs, t->datatype, c->comm));
    check_bytes("send buffer changed", send, send_copy, send_bytes, t);
    unsigned char *want = filled(recv_bytes, RECV_SENTINEL);
    put_blocks(t, want, n, recv_counts, recv_displs, which, v->k, 1, me);
    check_bytes("received", recv, want, recv_bytes, t);
    free(want);
    free(send);
    free(send_copy);
    free(recv);
    free(send_counts);
    free(send_displs);
    free(recv_counts);
    free(recv_displs);
}

static void run_alltoall(const struct comm_under_test *c)
{
    run_data_variants(c, C_ALLTOALL, alltoall_like_one);
    if (runs_large(c)) {
        struct variant v = {LARGE_VARIANT,   &type_int, NULL,
                            65536 / c->size, 0,         0};
        describe(c, &v, "(256 KiB)");
        alltoall_like_one(c, C_ALLTOALL, &v);
    }
}

static void run_alltoallv(const struct comm_under_test *c)
{
    run_data_variants(c, C_ALLTOALLV, alltoall_like_one);
}

/* Alltoallw: a datatype per pair.  Sender and receiver may use different
 * layouts of one type signature (a vector of two ints against two ints). */
struct pair_types {
    const struct test_type *send_type;
    int send_multiple;
    const struct test_type *recv_type;
    int recv_multiple;
};

static const struct pair_types pair_type_choices[] = {
    {&type_int, 1, &type_int, 1},
    {&type_vector, 1, &type_int, 2},
    {&type_struct, 1, &type_struct, 1},
    {&type_double, 1, &type_double, 1},
    {&type_int, 2, &type_vector, 1},
    {&type_char, 1, &type_char, 1},
    {&type_long_long, 1, &type_long_long, 1},
};
enum {
    PAIR_TYPE_COUNT = sizeof pair_type_choices / sizeof pair_type_choices[0]
};

/* Symmetric in the two ranks, so in place works with either's view. */
static const struct pair_types *pair_types_of(int a, int b, int k)
{
    return &pair_type_choices[(a + b + k) % PAIR_TYPE_COUNT];
}

/* Byte displacements for blocks in rank order `order`, each aligned to 8
 * and followed by an 8-byte gap.  Returns the buffer size in bytes. */
static size_t byte_layout(int n, const int *order, const size_t *block_bytes,
                          int *displs)
{
    size_t position = 0;
    for (int i = 0; i < n; i++) {
        int q = order[i];
        displs[q] = (int)position;
        position += (block_bytes[q] + 7) / 8 * 8 + 8;
    }
    return position + 8;
}

static void alltoallw_one(const struct comm_under_test *c,
                          enum collective which, const struct variant *v)
{
    int n = c->size, me = c->rank;
    int *send_counts = xmalloc(sizeof(int) * n);
    int *recv_counts = xmalloc(sizeof(int) * n);
    int *send_displs = xmalloc(sizeof(int) * n);
    int *recv_displs = xmalloc(sizeof(int) * n);
    int *order = xmalloc(sizeof(int) * n);
    size_t *send_block = xmalloc(sizeof(size_t) * n);
    size_t *recv_block = xmalloc(sizeof(size_t) * n);
    MPI_Datatype *send_types = xmalloc(sizeof(MPI_Datatype) * n);
    MPI_Datatype *recv_types = xmalloc(sizeof(MPI_Datatype) * n);
    const struct test_type **recv_test_types = xmalloc(sizeof(void *) * n);
    const struct test_type **send_test_types = xmalloc(sizeof(void *) * n);

    for (int q = 0; q < n; q++) {
        const struct pair_types *out = pair_types_of(me, q, v->k);
        const struct pair_types *in = pair_types_of(q, me, v->k);
        int out_elements = pair_count(v->count, me, q, v->k, v->in_place);
        int in_elements = pair_count(v->count, q, me, v->k, v->in_place);
        send_test_types[q] = out->send_type;
        send_counts[q] = out_elements * out->send_multiple;
        recv_test_types[q] = in->recv_type;
        recv_counts[q] = in_elements * in->recv_multiple;
        send_types[q] = send_test_types[q]->datatype;
        recv_types[q] = recv_test_types[q]->datatype;
        send_block[q] = (size_t)send_counts[q] * send_test_types[q]->extent;
        recv_block[q] = (size_t)recv_counts[q] * recv_test_types[q]->extent;
    }
    for (int i = 0; i < n; i++)
        order[i] = (me + 1 + i) % n;
    size_t send_bytes = byte_layout(n, order, send_block, send_displs);
    for (int i = 0; i < n; i++)
        order[i] = n - 1 - i;
    size_t recv_bytes = byte_layout(n, order, recv_block, recv_displs);

    unsigned char *send = filled(send_bytes, SEND_SENTINEL);
    unsigned char *recv = filled(recv_bytes, RECV_SENTINEL);
    unsigned char *want = filled(recv_bytes, RECV_SENTINEL);
    for (int q = 0; q < n; q++) {
        put_stream(send_test_types[q], send + send_displs[q], send_counts[q],
                   data_seed(which, v->k, me, q));
        /* In place, what goes to q comes from the receive layout. */
        if (v->in_place)
            put_stream(recv_test_types[q], recv + recv_displs[q],
                       recv_counts[q], data_seed(which, v->k, me, q));
        put_stream(recv_test_types[q], want + recv_displs[q], recv_counts[q],
                   data_seed(which, v->k, q, me));
    }
    unsigned char *send_copy = copy_of(send, send_bytes);
    const void *send_arg = v->in_place ? MPI_IN_PLACE : (const void *)send;
    MPI_CHECK(COLL(MPI_Alltoallw, MPI_Ialltoallw, MPI_Alltoallw_init, send_arg,
                   v->in_place ? NULL : send_counts,
                   v->in_place ? NULL : send_displs,
                   v->in_place ? NULL : send_types, recv, recv_counts,
                   recv_displs, recv_types, c->comm));
    check_bytes("send buffer changed", send, send_copy, send_bytes, &type_byte);
    check_bytes("received", recv, want, recv_bytes, &type_byte);
    free(send);
    free(send_copy);
    free(recv);
    free(want);
    free(send_counts);
    free(recv_counts);
    free(send_displs);
    free(recv_displs);
    free(order);
    free(send_block);
    free(recv_block);
    free(send_types);
    free(recv_types);
    free(recv_test_types);
    free(send_test_types);
}

static void run_alltoallw(const struct comm_under_test *c)
{
    for (int j = 0; j < variant_count(c, DATA_VARIANTS); j++) {
        struct variant v = data_variant(c, j, C_ALLTOALLW);
        v.type = NULL;
        /* MPICH 4.0.2's MPI_Ialltoallw (and _init) in place copies a
         * rank's own block as packed bytes into its receive type and
         * fails with "Message truncated" on one site (mpiexec -n 4,
         * COLL_CHECK_FORM=nonblocking): only the blocking form runs in
         * place. */
        if (form != FORM_BLOCKING)
            v.in_place = 0;
        describe(c, &v, "(per-pair datatypes)");
        alltoallw_one(c, C_ALLTOALLW, &v);
    }
}

/* ---- driver ------------------------------------------------------------- */

struct test_case {
    const char *name;
    void (*run)(const struct comm_under_test *);
};

static const struct test_case cases[] = {
    {"barrier", run_barrier},
    {"bcast", run_bcast},
    {"reduce", run_reduce},
    {"allreduce", run_allreduce},
    {"reduce_scatter", run_reduce_scatter},
    {"reduce_scatter_block", run_reduce_scatter_block},
    {"scan", run_scan},
    {"exscan", run_exscan},
    {"gather", run_gather},
    {"gatherv", run_gatherv},
    {"scatter", run_scatter},
    {"scatterv", run_scatterv},
    {"allgather", run_allgather},
    {"allgatherv", run_allgatherv},
    {"alltoall", run_alltoall},
    {"alltoallv", run_alltoallv},
    {"alltoallw", run_alltoallw},
};
enum { CASE_COUNT = sizeof cases / sizeof cases[0] };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    check_setup(world_rank, 0, NULL);
    check_context(call_description);

    for (int i = 1; i < argc; i++) {
        int known = 0;
        for (int c = 0; c < CASE_COUNT; c++)
            known |= strcmp(argv[i], cases[c].name) == 0;
        if (!known) {
            if (world_rank == 0)
                fprintf(stderr, "coll_check: unknown case '%s'\n", argv[i]);
            MPI_Finalize();
            return 1;
        }
    }

    const char *form_setting = getenv("COLL_CHECK_FORM");
    if (form_setting != NULL && strcmp(form_setting, "nonblocking") == 0)
        form = FORM_NONBLOCKING;
    else if (form_setting != NULL && strcmp(form_setting, "persistent") == 0)
        form = FORM_PERSISTENT;
    const char *trace_setting = getenv("COLL_CHECK_TRACE");
    trace = trace_setting != NULL && strcmp(trace_setting, "1") == 0;
    setup_types();
    MPI_CHECK(
        MPI_Op_create(user_commutative_function, 1, &user_commutative_op));
    MPI_CHECK(MPI_Op_create(user_matrix_function, 0, &user_matrix_op));
    setup_comms();

    for (int i = 0; i < CASE_COUNT; i++) {
        if (!case_selected(cases[i].name, argc, argv))
            continue;
        begin("%s", cases[i].name);
        for (int c = 0; c < COMM_COUNT; c++)
            cases[i].run(&comms[c]);
        call_description[0] = '\0';
        passed();
    }

    for (int c = 0; c < COMM_COUNT; c++)
        if (c != WORLD)
            MPI_CHECK(MPI_Comm_free(&comms[c].comm));
    MPI_CHECK(MPI_Op_free(&user_commutative_op));
    MPI_CHECK(MPI_Op_free(&user_matrix_op));
    MPI_CHECK(MPI_Type_free(&type_vector.datatype));
    MPI_CHECK(MPI_Type_free(&type_struct.datatype));
    MPI_CHECK(MPI_Type_free(&type_matrix.datatype));
    MPI_Finalize();
    return 0;
}
