/*
 * 2-D mesh combining allgather inside a site: Kumar & Kalé, "Scaling
 * All-to-All Multicast on Fat-tree Networks" (ICPADS 2004), section 3.1,
 * eq. 3.
 *
 * The P ranks fill a mesh of C = ceil(sqrt P) columns and R = ceil(P / C)
 * rows row by row; rank me sits at (me / C, me % C).  Only the last row
 * can be short: its missing places are the holes.
 *   1. Row multicast: every rank sends its block to the other ranks of its
 *      row.  A rank of the last row whose row place (R-1, y) is a hole
 *      sends to (j mod, y) instead, j its own column: the hole's
 *      role goes to the full rows of its column, spread evenly (the
 *      paper's rule).
 *   2. Column multicast: every rank combines its row's blocks, plus the
 *      last-row blocks it took for a hole, into one message to each other
 *      rank of its column; the hole stand-ins leave the last-row blocks
 *      out for a last-row receiver, which has them already.
 * Every rank then holds every block exactly once.  Rows and columns are
 * ranges of consecutive ranks or single blocks, so a message is at most
 * a handful of byte ranges described in place (no combining copies).
 *
 * Cost (eq. 3 without the NIC-memory terms), m the block size:
 *   T ≈ (C - 1 + R - 1) α + (C - 1) m β + (P - C) m β ≈ 2 sqrt(P) α + P m β,
 * two dependent rounds whatever P is; holes add no message and no byte.
 *
 * When it wins: short blocks on sites whose size is not a power of two,
 * where the hypercube's fold doubles its data (eq. 5); on large sites its
 * 2 sqrt(P) messages lose to the hypercube's log2 P on powers of two.
 */
#include <stdlib.h>

#include "coll/allgather/allgather_site.h"

struct mesh {
    int cols, rows;
    int last; /* ranks in the last row */
};

static int exists(const struct mesh *m, int row, int col)
{
    return row < m->rows - 1 || col < m->last;
}

/*
 * The phase-2 message from the rank at (row, col) to a rank of its
 * column in row `to_row`: its row, plus for a full-row rank in a column
 * with a hole the last-row blocks it stood in for, unless the receiver
 * is in the last row.  Pairs of [lo, hi) block ranges into `ranges`;
 * returns how many.
 */
static int column_message(const struct mesh *m, int row, int col, int to_row,
                          int *ranges)
{
    int n = 0;
    int lo = row * m->cols;
    int hi = row == m->rows - 1 ? lo + m->last : lo + m->cols;
    ranges[2 * n] = lo;
    ranges[2 * n++ + 1] = hi;
    if (row < m->rows - 1 && col >= m->last && to_row < m->rows - 1)
        for (int y = row % (m->rows - 1); y < m->last; y += m->rows - 1) {
            int rank = (m->rows - 1) * m->cols + y;
            ranges[2 * n] = rank;
            ranges[2 * n++ + 1] = rank + 1;
        }
    return n;
}

int allgather_site_mesh(const struct site_blocks *b)
{
    struct site_round r = SITE_ROUND_INIT;
    struct mesh m;
    int p = b->size, me = b->rank;
    m.cols = 1;
    while (m.cols * m.cols < p)
        m.cols++;
    m.rows = (p + m.cols - 1) / m.cols;
    m.last = p - (m.rows - 1) * m.cols;
    int row = me / m.cols, col = me % m.cols;
    int own[2] = {me, me + 1};
    int status = MPI_SUCCESS;
    /* At most one row range and one block per hole stand-in. */
    int *ranges = malloc((size_t)(2 * (m.cols + 1)) * sizeof *ranges);
    if (ranges == NULL)
        return MPI_ERR_NO_MEM;

    /* Phase 1: along the row; holes of the last row go to full rows. */
    for (int y = 0; y < m.cols && status == MPI_SUCCESS; y++) {
        if (y == col)
            continue;
        if (exists(&m, row, y)) {
            int peer = row * m.cols + y, block[2] = {peer, peer + 1};
            status = site_round_recv(&r, b, peer, block, 1);
            if (status == MPI_SUCCESS)
                status = site_round_send(&r, b, peer, own, 1);
        } else {
            status = site_round_send(&r, b, (col % (m.rows - 1)) * m.cols + y,
                                     own, 1);
        }
    }
    /* Stand-in for the hole at the bottom of my column. */
    if (row < m.rows - 1 && col >= m.last)
        for (int y = row % (m.rows - 1); y < m.last && status == MPI_SUCCESS;
             y += m.rows - 1) {
            int peer = (m.rows - 1) * m.cols + y, block[2] = {peer, peer + 1};
            status = site_round_recv(&r, b, peer, block, 1);
        }
    status = site_round_wait(&r, status);

    /* Phase 2: along the column, each row's blocks combined. */
    for (int x = 0; x < m.rows && status == MPI_SUCCESS; x++) {
        if (x == row || !exists(&m, x, col))
            continue;
        int peer = x * m.cols + col;
        int n = column_message(&m, x, col, row, ranges);
        status = site_round_recv(&r, b, peer, ranges, n);
        if (status == MPI_SUCCESS) {
            n = column_message(&m, row, col, x, ranges);
            status = site_round_send(&r, b, peer, ranges, n);
        }
    }
    status = site_round_wait(&r, status);
    site_round_free(&r);
    free(ranges);
    return status;
}
