/* x86-64 instruction lengths, enough to walk compiled code: legacy
 * prefixes, REX, the one-, two- and three-byte maps, VEX, EVEX and XOP,
 * ModRM/SIB/displacements and immediates.  No other state: the tests
 * compile this file on its own and check it against objdump. */
#include <stdint.h>

#ifndef SC_HIDDEN
#define SC_HIDDEN __attribute__((visibility("hidden")))
#endif

long sc_x86_insn(const uint8_t *p0, const uint8_t *end, long *opcode) SC_HIDDEN;

/* ---- x86-64 instruction lengths --------------------------------------- */

enum { M = 0x10, I8 = 1, I16 = 2, IZ = 3, IV = 4, MO = 5, I24 = 6, G3B = 7, G3Z = 8, R32 = 9 };

static const uint8_t one[256] = {
    /* 00 */ M, M, M, M, I8, IZ, 0, 0, M, M, M, M, I8, IZ, 0, 0,
    /* 10 */ M, M, M, M, I8, IZ, 0, 0, M, M, M, M, I8, IZ, 0, 0,
    /* 20 */ M, M, M, M, I8, IZ, 0, 0, M, M, M, M, I8, IZ, 0, 0,
    /* 30 */ M, M, M, M, I8, IZ, 0, 0, M, M, M, M, I8, IZ, 0, 0,
    /* 40 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 50 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 60 */ 0, 0, 0, M, 0, 0, 0, 0, IZ, M | IZ, I8, M | I8, 0, 0, 0, 0,
    /* 70 */ I8, I8, I8, I8, I8, I8, I8, I8, I8, I8, I8, I8, I8, I8, I8, I8,
    /* 80 */ M | I8, M | IZ, M | I8, M | I8, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 90 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* a0 */ MO, MO, MO, MO, 0, 0, 0, 0, I8, IZ, 0, 0, 0, 0, 0, 0,
    /* b0 */ I8, I8, I8, I8, I8, I8, I8, I8, IV, IV, IV, IV, IV, IV, IV, IV,
    /* c0 */ M | I8, M | I8, I16, 0, 0, 0, M | I8, M | IZ, I24, 0, I16, 0, 0, I8, 0, 0,
    /* d0 */ M, M, M, M, I8, I8, 0, 0, M, M, M, M, M, M, M, M,
    /* e0 */ I8, I8, I8, I8, I8, I8, I8, I8, R32, R32, 0, I8, 0, 0, 0, 0,
    /* f0 */ 0, 0, 0, 0, 0, 0, M | G3B, M | G3Z, 0, 0, 0, 0, 0, 0, M, M,
};

static const uint8_t two[256] = {
    /* 00 */ M, M, M, M, 0, 0, 0, 0, 0, 0, 0, 0, 0, M, 0, M | I8,
    /* 10 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 20 */ M, M, M, M, 0, 0, 0, 0, M, M, M, M, M, M, M, M,
    /* 30 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 40 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 50 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 60 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* 70 */ M | I8, M | I8, M | I8, M | I8, M, M, M, 0, M, M, M, M, M, M, M, M,
    /* 80 */ R32, R32, R32, R32, R32, R32, R32, R32, R32, R32, R32, R32, R32, R32, R32, R32,
    /* 90 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* a0 */ 0, 0, 0, M, M | I8, M, 0, 0, 0, 0, 0, M, M | I8, M, M, M,
    /* b0 */ M, M, M, M, M, M, M, M, M, M, M | I8, M, M, M, M, M,
    /* c0 */ M, M, M | I8, M, M | I8, M | I8, M | I8, M, 0, 0, 0, 0, 0, 0, 0, 0,
    /* d0 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* e0 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
    /* f0 */ M, M, M, M, M, M, M, M, M, M, M, M, M, M, M, M,
};

static int vex0f_imm(uint8_t op) { return (op >= 0x70 && op <= 0x73) || op == 0xC2 || op == 0xC4 || op == 0xC5 || op == 0xC6; }

/* Length of the instruction at p, or -1.  *opcode gets the offset of its
 * first opcode byte (after prefixes). */
long sc_x86_insn(const uint8_t *p0, const uint8_t *end, long *opcode)
{
    const uint8_t *p = p0;
    int o16 = 0, a32 = 0, w = 0;
    for (;;) {
        if (p >= end || p - p0 > 14)
            return -1;
        uint8_t b = *p;
        if (b == 0x66)
            o16 = 1;
        else if (b == 0x67)
            a32 = 1;
        else if (!(b == 0xF0 || b == 0xF2 || b == 0xF3 || b == 0x2E || b == 0x36 || b == 0x3E || b == 0x26 ||
                   b == 0x64 || b == 0x65))
            break;
        p++;
    }
    if ((*p & 0xF0) == 0x40) {
        w = (*p & 8) != 0;
        p++;
    }
    if (p >= end)
        return -1;
    if (opcode)
        *opcode = p - p0;
    uint8_t op = *p++, f;
    if (op == 0x0F) {
        if (p >= end)
            return -1;
        uint8_t op2 = *p++;
        if (op2 == 0x38) {
            p++;
            f = M;
        } else if (op2 == 0x3A) {
            p++;
            f = M | I8;
        } else {
            f = two[op2];
        }
    } else if (op == 0xC4 || op == 0xC5) {
        int map = 1;
        if (op == 0xC4) {
            if (p >= end)
                return -1;
            map = p[0] & 0x1F;
            p += 2;
        } else {
            p += 1;
        }
        if (p >= end)
            return -1;
        uint8_t v = *p++;
        f = M | (map == 3 || (map == 1 && vex0f_imm(v)) ? I8 : 0);
        if (map == 1 && v == 0x77)
            f = 0;
    } else if (op == 0x62) {
        if (p + 3 >= end)
            return -1;
        int map = p[0] & 0x07;
        p += 3;
        uint8_t v = *p++;
        f = M | (map == 3 || (map == 1 && vex0f_imm(v)) ? I8 : 0);
    } else if (op == 0x8F && p < end && (p[0] & 0x1F) >= 8) {
        int map = p[0] & 0x1F; /* AMD XOP */
        p += 3;
        f = M | (map == 8 ? I8 : map == 10 ? IZ : 0);
    } else {
        f = one[op];
    }
    int imm = f & 0x0F;
    if (f & M) {
        if (p >= end)
            return -1;
        uint8_t m = *p++;
        int mod = m >> 6, rm = m & 7, reg = (m >> 3) & 7;
        if (mod != 3) {
            if (rm == 4) {
                if (p >= end)
                    return -1;
                uint8_t sib = *p++;
                if (mod == 0 && (sib & 7) == 5)
                    p += 4;
            } else if (mod == 0 && rm == 5) {
                p += 4;
            }
            if (mod == 1)
                p += 1;
            else if (mod == 2)
                p += 4;
        }
        if (imm == G3B)
            imm = reg < 2 ? I8 : 0;
        else if (imm == G3Z)
            imm = reg < 2 ? IZ : 0;
    }
    switch (imm) {
    case I8: p += 1; break;
    case I16: p += 2; break;
    case IZ: p += o16 ? 2 : 4; break;
    case IV: p += w ? 8 : o16 ? 2 : 4; break;
    case MO: p += a32 ? 4 : 8; break;
    case I24: p += 3; break;
    case R32: p += 4; break;
    default: break;
    }
    if (p > end)
        return -1;
    return p - p0;
}


