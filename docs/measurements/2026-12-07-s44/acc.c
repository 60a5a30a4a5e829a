#define _GNU_SOURCE
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <time.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>
static double now(){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9;}
int main(){int l=socket(AF_INET,SOCK_STREAM|SOCK_NONBLOCK,0);struct sockaddr_in a={.sin_family=AF_INET};inet_pton(AF_INET,"127.0.0.1",&a.sin_addr);bind(l,(void*)&a,sizeof a);listen(l,511);
int N=1000000; double t=now(); for(int i=0;i<N;i++) accept4(l,NULL,NULL,SOCK_NONBLOCK); printf("accept4 EAGAIN %.3f us\n",(now()-t)/N*1e6);
t=now(); for(int i=0;i<N;i++) getppid(); printf("getppid %.3f us\n",(now()-t)/N*1e6);
int ep=epoll_create1(0); struct epoll_event ev; t=now(); for(int i=0;i<N;i++) epoll_wait(ep,&ev,1,0); printf("epoll_wait(0) %.3f us\n",(now()-t)/N*1e6);
}
