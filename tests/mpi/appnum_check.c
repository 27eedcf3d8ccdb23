/*
 * appnum_check: MPI_APPNUM as an MPMD program sees it (MPI 4.1 section
 * 11.10.3), for tests/integration/test_mpmd.py.  Started as one or more
 * gridrun segments; every rank prints
 *
 *   rank R appnum A attr A split S/N ARGS...
 *
 * A from MPI_Comm_get_attr, attr from the deprecated MPI_Attr_get (both
 * on MPI_COMM_WORLD), S/N its rank and size in MPI_COMM_WORLD split by
 * A, ARGS the program's arguments (which segment it was started from).
 * Exits 1 when MPI_APPNUM is missing, the two calls disagree, or the
 * split's members do not all have A.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, flag, attr_flag, *appnum, *attr;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    MPI_Attr_get(MPI_COMM_WORLD, MPI_APPNUM, &attr, &attr_flag);
    if (!flag || !attr_flag) {
        fprintf(stderr, "rank %d: MPI_APPNUM not set\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm app;
    int app_rank, app_size, min, max;
    MPI_Comm_split(MPI_COMM_WORLD, *appnum, rank, &app);
    MPI_Comm_rank(app, &app_rank);
    MPI_Comm_size(app, &app_size);
    MPI_Allreduce(appnum, &min, 1, MPI_INT, MPI_MIN, app);
    MPI_Allreduce(appnum, &max, 1, MPI_INT, MPI_MAX, app);
    /* One write per line: MPICH leaves the ranks' stdout unbuffered, where
     * glibc writes a line's text and its newline apart (puts), and hydra
     * forwards the pieces of several ranks as it reads them. */
    char line[4096];
    int len =
        snprintf(line, sizeof line, "rank %d appnum %d attr %d split %d/%d",
                 rank, *appnum, *attr, app_rank, app_size);
    for (int i = 1; i < argc && len < (int)sizeof line; i++)
        len += snprintf(line + len, sizeof line - (size_t)len, " %s", argv[i]);
    if (len >= (int)sizeof line - 1)
        len = (int)sizeof line - 2;
    line[len] = '\n';
    line[len + 1] = '\0';
    fputs(line, stdout);
    int status = *attr != *appnum || min != *appnum || max != *appnum;
    MPI_Comm_free(&app);
    MPI_Finalize();
    return status;
}
