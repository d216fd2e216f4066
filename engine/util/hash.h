/* hash.h: the 64-bit finalizer the hash tables mix their keys with (the
 * translation cache, the glossary's trie edges).
 *
 * MurmurHash3's fmix64: a bijection in which every input bit reaches every
 * output bit, so the low bits a table's mask keeps depend on the high ones
 * too.  Not keyed: a table that must resist chosen keys mixes a seed in first. */
#ifndef MT_HASH_H
#define MT_HASH_H

#include <stdint.h>

static inline uint64_t mt_hash_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

#endif
