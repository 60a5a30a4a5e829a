#define _GNU_SOURCE
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <time.h>
#include <poll.h>
#include <unistd.h>
static double now(){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9;}
int main(){int l=socket(AF_INET,SOCK_STREAM,0);struct sockaddr_in a={.sin_family=AF_INET};inet_pton(AF_INET,"127.0.0.1",&a.sin_addr);socklen_t al=sizeof a;bind(l,(void*)&a,sizeof a);listen(l,8);getsockname(l,(void*)&a,&al);
int c=socket(AF_INET,SOCK_STREAM,0);connect(c,(void*)&a,sizeof a);int s=accept(l,0,0);char b;
int N=1000000; double t=now(); for(int i=0;i<N;i++) recv(s,&b,1,MSG_PEEK|MSG_DONTWAIT); printf("peek EAGAIN %.3f us\n",(now()-t)/N*1e6);
struct pollfd p={.fd=l,.events=POLLIN}; t=now(); for(int i=0;i<N;i++) poll(&p,1,0); printf("poll listener %.3f us\n",(now()-t)/N*1e6);
}
