/* cost: what the runtime costs per process and per call, measured in one
 * process: loading and starting the library (dlopen, with the constructor's
 * scan for raw system calls), the first deferred write (which starts the
 * guardian), a deferred 8-byte write, and a read() through the wrapper
 * while bytes are pending, next to getppid and a plain read.
 *   cc -O2 -o cost bench/runtime/cost.c -ldl && ./cost runtime/build/libsyscluster-preload.so */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
int main(int argc,char**argv){
  setenv("SYSCLUSTER_COALESCE","4096",1);
  double t0=now(); void*h=dlopen(argv[1],RTLD_NOW); double t1=now();
  ssize_t (*w)(int,const void*,size_t)=dlsym(h,"write");
  int fd=open("/tmp/cost.out",O_WRONLY|O_CREAT|O_TRUNC,0644);
  for(int i=0;i<4;i++) w(fd,"12345678",8);
  double t2=now(); w(fd,"12345678",8); double t3=now();
  double t4=now(); for(int i=0;i<1000000;i++) w(fd,"12345678",8); double t5=now();
  double t6=now(); for(int i=0;i<1000000;i++) getppid(); double t7=now();
  int (*rd)(int,void*,size_t)=dlsym(h,"read"); int z=open("/dev/zero",O_RDONLY); char b[8];
  double t8=now(); for(int i=0;i<1000000;i++) read(z,b,8); double t9=now();
  double ta=now(); for(int i=0;i<1000000;i++) rd(z,b,8); double tb=now();
  printf("load+init %.0f us; first deferred write (starts the guardian) %.0f us; deferred write %.1f ns; getppid %.1f ns; read plain %.1f ns, wrapped with bytes pending %.1f ns\n",t1-t0,t3-t2,(t5-t4)*1e3/1e6,(t7-t6)*1e3/1e6,(t9-t8)*1e3/1e6,(tb-ta)*1e3/1e6);
  return 0;}
