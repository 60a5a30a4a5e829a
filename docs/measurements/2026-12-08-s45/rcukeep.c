/* queues an RCU callback on its CPU every US microseconds (a socket's inode is freed after a grace period),
   which keeps the scheduler tick running there while idle: an experiment, not a tool */
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    long us = argc > 1 ? atol(argv[1]) : 2000;
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    for (;;) { close(socket(AF_UNIX, SOCK_STREAM, 0)); nanosleep(&ts, 0); }
}
