/* SPDX-License-Identifier: MIT */
/*
 * Description: a datagram sent on loopback inside a multi-call is there
 * for the next entry's non-blocking receive, as it is between two direct
 * calls: sendto then recvfrom(MSG_DONTWAIT) in one multi-call, many times,
 * never EAGAIN on kmod where direct never gets it.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
	unsigned backends[] = { MC_BACKEND_DIRECT, MC_BACKEND_KMOD };
	int again[2] = { 0, 0 };

	for (int k = 0; k < 2; k++) {
		struct mc_ctx *ctx = t_ctx(backends[k]);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t al = sizeof(a);
		int tx = socket(AF_INET, SOCK_DGRAM, 0), rx = socket(AF_INET, SOCK_DGRAM, 0);
		struct mc_call c[2];
		char b[64];

		if (!ctx)
			return t_finish();
		bind(rx, (struct sockaddr *)&a, sizeof(a));
		getsockname(rx, (struct sockaddr *)&a, &al);
		for (int i = 0; i < 2000; i++) {
			mc_prep_sendto(&c[0], tx, "datagram", 8, 0, (struct sockaddr *)&a, al);
			mc_prep_recvfrom(&c[1], rx, b, sizeof(b), MSG_DONTWAIT, NULL, NULL);
			mc_run(ctx, c, 2);
			if (c[1].result == -EAGAIN) {
				again[k]++;
				while (recv(rx, b, sizeof(b), MSG_DONTWAIT) > 0)
					;
			}
		}
		close(tx), close(rx);
		mc_ctx_free(ctx);
	}
	printf("note: loopback: EAGAIN direct %d, kmod %d of 2000\n", again[0], again[1]);
	T_ASSERT(again[0] > 0 || again[1] == 0, "kmod: %d receives found nothing, direct: none", again[1]);
	return t_finish();
}
