// mini server: one thread, blocking accept, answers one GET per connection with
// a fixed head and a file by sendfile, in one of several system-call patterns.
#define _GNU_SOURCE
#include <sys/socket.h>
#include <sys/sendfile.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <sys/epoll.h>
#include <poll.h>
int main(int argc, char **argv) {
  int port = atoi(argv[1]); const char *mode = argv[2]; const char *file = argv[3];
  int f = open(file, O_RDONLY); struct stat st; fstat(f, &st);
  char head[512];
  int hl = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nServer: mini\r\nContent-Type: application/octet-stream\r\nContent-Length: %ld\r\nConnection: close\r\n\r\n", (long)st.st_size);
  int l = socket(AF_INET, SOCK_STREAM, 0); int one = 1;
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (strchr(mode, 'n')) setsockopt(l, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)}; inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (bind(l, (void*)&a, sizeof a) || listen(l, 511)) { perror("bind"); return 1; }
  int nb = strchr(mode, 'e') != NULL; // epoll + nonblocking listener, drain accept to EAGAIN
  int lt = strchr(mode, 'l') != NULL; // epoll level-triggered, one accept a wake (nginx)
  int ep = -1;
  if (nb || lt) { fcntl(l, F_SETFL, O_NONBLOCK); ep = epoll_create1(0); struct epoll_event ev = {.events = EPOLLIN|(nb?EPOLLET:0), .data.fd = l}; epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev); }
  char buf[4096];
  for (;;) {
    int c;
    if (lt) {
      struct epoll_event ev; epoll_wait(ep, &ev, 1, -1);
      c = accept4(l, NULL, NULL, SOCK_NONBLOCK);
    } else if (nb) {
      if (strchr(mode, 'q')) { struct pollfd p = {.fd = l, .events = POLLIN}; if (poll(&p, 1, 0) == 0) { struct epoll_event ev; epoll_wait(ep, &ev, 1, -1); } }
      c = accept4(l, NULL, NULL, SOCK_NONBLOCK);
      if (c < 0) { struct epoll_event ev; epoll_wait(ep, &ev, 1, -1); continue; }
    } else c = accept4(l, NULL, NULL, 0);
    if (c < 0) continue;
    ssize_t n;
    for (;;) { n = recv(c, buf, sizeof buf, 0); if (n < 0 && errno == EAGAIN) { usleep(0); continue; } break; }
    off_t off = 0;
    if (strchr(mode, 'c')) { // nginx: cork, writev head, sendfile, uncork
      setsockopt(c, IPPROTO_TCP, TCP_CORK, &one, sizeof one);
      struct iovec iv = {head, hl}; writev(c, &iv, 1);
      sendfile(c, f, &off, st.st_size);
      int zero = 0; setsockopt(c, IPPROTO_TCP, TCP_CORK, &zero, sizeof zero);
    } else if (strchr(mode, 'w')) { // copy: head + body in one write from memory
      static char *mem; static size_t ml; if (!mem) { ml = hl + st.st_size; mem = malloc(ml); memcpy(mem, head, hl); pread(f, mem + hl, st.st_size, 0); }
      send(c, mem, ml, MSG_NOSIGNAL);
    } else { // tern: head with MSG_MORE, then sendfile
      send(c, head, hl, MSG_MORE | MSG_NOSIGNAL);
      sendfile(c, f, &off, st.st_size);
    }
    if (strchr(mode, 'p')) { char b; recv(c, &b, 1, MSG_PEEK | MSG_DONTWAIT); }
    close(c);
  }
}
