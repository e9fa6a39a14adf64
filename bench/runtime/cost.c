/* cost: what the runtime costs per call, measured in one process run
 * under the library: the first deferred write (a new buffer; the guardian
 * is already there, started with the library), a deferred 8-byte write,
 * getppid (a system call, for scale) and a read() of /dev/zero through the
 * wrapper while bytes are pending.  Run it plain for the reference.
 *   cc -O2 -o cost bench/runtime/cost.c
 *   env LD_PRELOAD=preload/build/libsyscluster-preload.so SYSCLUSTER_COALESCE=4096 ./cost FILE
 * (What starting the library and its guardian costs a process:
 * bench/runtime/timebound.py.) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
int main(int argc,char**argv){
  if(argc!=2){fprintf(stderr,"usage: cost FILE\n");return 2;}
  int fd=open(argv[1],O_WRONLY|O_CREAT|O_TRUNC,0644); if(fd<0){perror(argv[1]);return 2;}
  for(int i=0;i<4;i++) if(write(fd,"12345678",8)!=8) return 2;
  double t2=now(); if(write(fd,"12345678",8)!=8) return 2; double t3=now();
  double t4=now(); for(int i=0;i<1000000;i++) if(write(fd,"12345678",8)!=8) return 2; double t5=now();
  double t6=now(); for(int i=0;i<1000000;i++) getppid(); double t7=now();
  int z=open("/dev/zero",O_RDONLY); char b[8];
  if(write(fd,"12345678",8)!=8) return 2; /* bytes pending while reading */
  double t8=now(); for(int i=0;i<1000000;i++) if(read(z,b,8)!=8) return 2; double t9=now();
  printf("first deferred write %.1f us; deferred write %.1f ns; getppid %.1f ns; read with bytes pending %.1f ns\n",
         t3-t2,(t5-t4)*1e3/1e6,(t7-t6)*1e3/1e6,(t9-t8)*1e3/1e6);
  return close(fd)==0?0:1;}
