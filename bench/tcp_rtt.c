/*
 * gridcoll-tcp-rtt: the baseline for the relay latency benchmark.  Two
 * processes ping-pong a small message over one direct loopback TCP
 * connection (TCP_NODELAY, blocking I/O: the cheapest possible path) and
 * the median round trip is printed as `rtt_us_median=<x>`.
 *
 *   gridcoll-tcp-rtt [--size BYTES] [--iters N] [--csv]
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gc_util.h"

static int full_io(int fd, void *buf, size_t len, int writing)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = writing ? write(fd, (char *)buf + done, len - done)
                            : read(fd, (char *)buf + done, len - done);
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    uint64_t size = 8;
    long iters = 2000;
    int csv = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            if (gc_parse_size(argv[++i], &size) != 0 || size == 0 ||
                size > (1u << 20)) {
                fprintf(stderr, "gridcoll-tcp-rtt: bad --size\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
            iters = atol(argv[++i]);
        } else if (strcmp(argv[i], "--csv") == 0) {
            csv = 1;
        } else {
            fprintf(stderr,
                    "usage: gridcoll-tcp-rtt [--size B] [--iters N] [--csv]\n");
            return 2;
        }
    }
    if (iters < 10) {
        fprintf(stderr, "gridcoll-tcp-rtt: --iters must be >= 10\n");
        return 2;
    }

    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    if (listener < 0 || bind(listener, (struct sockaddr *)&addr, len) != 0 ||
        listen(listener, 1) != 0 ||
        getsockname(listener, (struct sockaddr *)&addr, &len) != 0) {
        perror("gridcoll-tcp-rtt: listen");
        return 1;
    }
    char *buf = malloc(size);
    uint64_t *samples = malloc((size_t)iters * sizeof *samples);
    if (buf == NULL || samples == NULL)
        return 1;
    memset(buf, 0x5a, size);
    int one = 1;

    pid_t echo = fork();
    if (echo == 0) {
        int fd = accept(listener, NULL, NULL);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        while (full_io(fd, buf, size, 0) == 0 && full_io(fd, buf, size, 1) == 0)
            ;
        _exit(0);
    }
    close(listener);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        perror("gridcoll-tcp-rtt: connect");
        return 1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (long i = 0; i < iters; i++) {
        uint64_t start = gc_now_ns();
        if (full_io(fd, buf, size, 1) != 0 || full_io(fd, buf, size, 0) != 0) {
            fprintf(stderr, "gridcoll-tcp-rtt: echo process went away\n");
            return 1;
        }
        samples[i] = gc_now_ns() - start;
    }
    close(fd);
    waitpid(echo, NULL, 0);
    qsort(samples, (size_t)iters, sizeof *samples, compare_u64);
    double median_us = (double)samples[iters / 2] / 1e3;
    if (csv)
        printf("size,iters,rtt_us_median\n%llu,%ld,%.2f\n",
               (unsigned long long)size, iters, median_us);
    else
        printf("gridcoll-tcp-rtt: size=%llu iters=%ld rtt_us_median=%.2f\n",
               (unsigned long long)size, iters, median_us);
    free(buf);
    free(samples);
    return 0;
}
