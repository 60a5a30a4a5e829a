// tern's and nginx's system calls for one GET per connection, and nothing else.
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
#include <poll.h>
#include <sys/epoll.h>
#include <pthread.h>
static void *idle(void *x) { for (;;) pause(); return x; }
int main(int argc, char **argv) {
  int port = atoi(argv[1]); char mode = argv[2][0]; const char *file = argv[3];
  int f = open(file, O_RDONLY); struct stat st; fstat(f, &st);
  char head[512];
  int hl = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nServer: mini\r\nContent-Type: application/octet-stream\r\nContent-Length: %ld\r\nConnection: close\r\n\r\n", (long)st.st_size);
  int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0); int one = 1, zero = 0;
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(l, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)}; inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (bind(l, (void*)&a, sizeof a) || listen(l, 511)) { perror("bind"); return 1; }
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN | (mode != 'N' ? EPOLLET : 0), .data.fd = l};
  epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
  char buf[8192];
  struct sockaddr_in peer; socklen_t pl;
  int cork = 0; if (mode == 'C') { cork = 1; mode = 'T'; }
  if (mode == 'U') { pthread_t t; for (int i = 0; i < 3; i++) pthread_create(&t, NULL, idle, NULL); mode = 'T'; }
  if (mode == 'T') {
    for (;;) {
      struct pollfd p = {.fd = l, .events = POLLIN};
      if (poll(&p, 1, 0) == 0) { epoll_wait(ep, &ev, 1, 1000); continue; }
      pl = sizeof peer;
      int c = accept4(l, (void*)&peer, &pl, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (c < 0) continue;
      ssize_t n = read(c, buf, sizeof buf);
      if (n < 0 && errno == EAGAIN) { struct pollfd q = {.fd = c, .events = POLLIN}; poll(&q, 1, -1); n = read(c, buf, sizeof buf); }
      if (n <= 0) { close(c); continue; }
      off_t off = 0;
      if (cork) setsockopt(c, IPPROTO_TCP, TCP_CORK, &one, sizeof one);
      send(c, head, hl, MSG_MORE | MSG_NOSIGNAL);
      sendfile(c, f, &off, st.st_size);
      char b; recv(c, &b, 1, MSG_PEEK | MSG_DONTWAIT);
      close(c);
    }
  } else {
    int c = -1;
    for (;;) {
      struct epoll_event evs[8];
      int k = epoll_wait(ep, evs, 8, 60000);
      for (int i = 0; i < k; i++) {
        if (evs[i].data.fd == l) {
          pl = sizeof peer;
          c = accept4(l, (void*)&peer, &pl, SOCK_NONBLOCK);
          if (c < 0) continue;
          struct epoll_event ce = {.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP, .data.fd = c};
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
        } else {
          int s = evs[i].data.fd;
          ssize_t n = recv(s, buf, sizeof buf, 0);
          if (n < 0 && errno == EAGAIN) continue;
          if (n <= 0) { close(s); continue; }
          off_t off = 0;
          setsockopt(s, IPPROTO_TCP, TCP_CORK, &one, sizeof one);
          struct iovec iv = {head, hl}; writev(s, &iv, 1);
          sendfile(s, f, &off, st.st_size);
          setsockopt(s, IPPROTO_TCP, TCP_CORK, &zero, sizeof zero);
          close(s);
        }
      }
    }
  }
}
