/* pickle.c: the restricted state-dict reader of pickle.h.
 *
 * A small stack machine over the opcodes torch.save emits.  Values live in
 * one array of objects addressed by index (the stack, the memo and the
 * containers hold indices), so BINGET can share a value without ownership
 * questions and everything is freed at once at the end.  Strings are not
 * copied while reading: an object points into the caller's buffer; the final
 * state dict copies what it keeps.
 *
 * Callables never run.  A GLOBAL resolves to one of a few known names (else
 * the whole file is refused), and REDUCE of those names is interpreted here:
 * OrderedDict() makes an empty dict, _rebuild_tensor_v2(...) records a view,
 * _rebuild_parameter(t, ...) is t.  A persistent id (BINPERSID) becomes a
 * storage reference; its bytes are the caller's business.
 *
 * Python's MARK starts a fresh stack (the items below are out of reach until
 * the mark is popped); `floor` plays that role here.  Nothing recurses, so no
 * input can exhaust the C stack.
 */
#include "pickle.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/check.h"

/* Limits: a large state dict (a few thousand tensors) needs ~20 objects per
 * tensor, a stack of ~2000 (SETITEMS batches of 1000 pairs), a memo as large
 * as its object count, and nesting of three marks. */
#define MAX_OBJECTS (1u << 20)
#define MAX_REFS    (1u << 24)          /* container slots, all containers together */
#define MAX_STACK   (1u << 16)
#define MAX_MARKS   64
#define MAX_MEMO    (1u << 20)
#define MAX_STRING  (1u << 16)          /* a key, a storage key, a GLOBAL line */
#define NONE_IDX    UINT32_MAX

/* ---- the allowed globals ------------------------------------------------------ */
typedef enum { G_ORDERED_DICT, G_REBUILD_TENSOR, G_REBUILD_PARAM, G_STORAGE } gkind;

typedef struct {
    const char *module, *name;
    gkind       kind;
    mt_dtype    dtype;                  /* storages; MT_DT_UNKNOWN: a torch type we cannot read */
    const char *what;                   /* storages: the dtype as torch names it */
} global_def;

static const global_def GLOBALS[] = {
    {"collections", "OrderedDict", G_ORDERED_DICT, 0, NULL},
    {"torch._utils", "_rebuild_tensor_v2", G_REBUILD_TENSOR, 0, NULL},
    {"torch._utils", "_rebuild_parameter", G_REBUILD_PARAM, 0, NULL},
    {"torch", "FloatStorage", G_STORAGE, MT_DT_F32, "float32"},
    {"torch", "HalfStorage", G_STORAGE, MT_DT_F16, "float16"},
    {"torch", "BFloat16Storage", G_STORAGE, MT_DT_BF16, "bfloat16"},
    {"torch", "DoubleStorage", G_STORAGE, MT_DT_F64, "float64"},
    {"torch", "LongStorage", G_STORAGE, MT_DT_I64, "int64"},
    {"torch", "IntStorage", G_STORAGE, MT_DT_I32, "int32"},
    {"torch", "ShortStorage", G_STORAGE, MT_DT_I16, "int16"},
    {"torch", "CharStorage", G_STORAGE, MT_DT_I8, "int8"},
    {"torch", "ByteStorage", G_STORAGE, MT_DT_U8, "uint8"},
    {"torch", "BoolStorage", G_STORAGE, MT_DT_BOOL, "bool"},
    /* known to torch, not to us: accepted as names so the refusal can say which dtype */
    {"torch", "ComplexFloatStorage", G_STORAGE, MT_DT_UNKNOWN, "complex64"},
    {"torch", "ComplexDoubleStorage", G_STORAGE, MT_DT_UNKNOWN, "complex128"},
    {"torch", "QInt8Storage", G_STORAGE, MT_DT_UNKNOWN, "qint8"},
    {"torch", "QUInt8Storage", G_STORAGE, MT_DT_UNKNOWN, "quint8"},
    {"torch", "QInt32Storage", G_STORAGE, MT_DT_UNKNOWN, "qint32"},
    {"torch", "QUInt4x2Storage", G_STORAGE, MT_DT_UNKNOWN, "quint4x2"},
    {"torch", "QUInt2x4Storage", G_STORAGE, MT_DT_UNKNOWN, "quint2x4"},
};
#define N_GLOBALS ((int)(sizeof GLOBALS / sizeof GLOBALS[0]))

/* ---- objects ---------------------------------------------------------------------- */
typedef enum { O_NONE, O_BOOL, O_INT, O_STR, O_TUPLE, O_LIST, O_DICT, O_GLOBAL, O_STORAGE, O_TENSOR } okind;

typedef struct {
    okind kind;
    union {
        int64_t i;                                              /* O_BOOL, O_INT */
        struct { const uint8_t *s; uint32_t len; } str;         /* O_STR: into the input */
        struct { uint32_t *items, n; size_t cap; } seq;                /* O_TUPLE, O_LIST, O_DICT (key, value pairs) */
        int global;                                             /* O_GLOBAL: index in GLOBALS */
        struct { int global; uint32_t key; uint64_t numel; } storage;   /* key: an O_STR */
        uint32_t tensor;                                        /* O_TENSOR: index in views */
    } u;
} obj;

typedef struct {
    uint32_t storage;                   /* an O_STORAGE */
    uint64_t offset;
    int      rank;
    int64_t  size[MT_MAX_RANK], stride[MT_MAX_RANK];
} view;

typedef struct {
    const char    *where;
    const uint8_t *p;
    size_t         n, at, op_at;        /* op_at: where the current opcode starts, for messages */
    mt_err        *err;
    obj           *objs;
    uint32_t       n_objs, n_refs;
    size_t         cap_objs;
    view          *views;
    uint32_t       n_views;
    size_t         cap_views;
    uint32_t      *stack, n_stack, floor;
    size_t         cap_stack;
    uint32_t       marks[MAX_MARKS], n_marks;
    uint32_t      *memo, n_memo;              /* n_memo: slots filled (MEMOIZE's next index) */
    size_t         cap_memo;
} unpickler;

struct mt_pickle_sd {
    mt_pickle_tensor *t;
    int               n;
};

/* ---- errors and growth ------------------------------------------------------------- */
__attribute__((format(printf, 2, 3)))
static mt_status fail(unpickler *u, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mt_err_set(u->err, MT_ERR_FORMAT, "%s: byte %zu: %s", u->where, u->op_at, msg);
}

static mt_status nomem(unpickler *u)
{
    return mt_err_set(u->err, MT_ERR_NOMEM, "%s: out of memory", u->where);
}

/* Room for need elements in *arr (T **; capacity *cap, element size es), at
 * most max elements: 1, or 0 over max or out of memory.  Every max is a power
 * of two, so doubling from 16 never passes it. */
static int grow(void *arr, size_t *cap, size_t need, size_t es, uint32_t max)
{
    return need <= *cap || (need <= max && !mt_grow(arr, cap, need, es, 16));
}

/* ---- objects and the stack ---------------------------------------------------------- */
static mt_status new_obj(unpickler *u, okind kind, uint32_t *idx)
{
    if (u->n_objs >= MAX_OBJECTS)
        return fail(u, "more than %u objects: not a state dict", MAX_OBJECTS);
    if (!grow(&u->objs, &u->cap_objs, u->n_objs + 1, sizeof *u->objs, MAX_OBJECTS))
        return nomem(u);
    obj *o = &u->objs[u->n_objs];
    memset(o, 0, sizeof *o);
    o->kind = kind;
    *idx = u->n_objs++;
    return MT_OK;
}

static mt_status push(unpickler *u, uint32_t idx)
{
    if (u->n_stack >= MAX_STACK)
        return fail(u, "stack deeper than %u", MAX_STACK);
    if (!grow(&u->stack, &u->cap_stack, u->n_stack + 1, sizeof *u->stack, MAX_STACK))
        return nomem(u);
    u->stack[u->n_stack++] = idx;
    return MT_OK;
}

/* A new object of kind, pushed; *o points at it (valid until the next new_obj). */
static mt_status push_new(unpickler *u, okind kind, obj **o)
{
    uint32_t idx = 0;
    mt_status st = new_obj(u, kind, &idx);
    if (st == MT_OK && (st = push(u, idx)) == MT_OK && o)
        *o = &u->objs[idx];
    return st;
}

static mt_status pop(unpickler *u, uint32_t *idx)
{
    if (u->n_stack <= u->floor)
        return fail(u, "stack underflow");
    *idx = u->stack[--u->n_stack];
    return MT_OK;
}

/* The top two of the stack popped: *first the top, then *second. */
static mt_status pop2(unpickler *u, uint32_t *first, uint32_t *second)
{
    mt_status st = pop(u, first);
    return st == MT_OK ? pop(u, second) : st;
}

static mt_status top(unpickler *u, uint32_t *idx)
{
    if (u->n_stack <= u->floor)
        return fail(u, "stack underflow");
    *idx = u->stack[u->n_stack - 1];
    return MT_OK;
}

/* Pops back to the last MARK: the items are stack[*from, n_stack), which the
 * caller consumes before pushing anything; n_stack is set to *from. */
static mt_status pop_mark(unpickler *u, uint32_t *from)
{
    if (!u->n_marks)
        return fail(u, "no MARK to pop to");
    *from = u->marks[--u->n_marks];
    u->floor = u->n_marks ? u->marks[u->n_marks - 1] : 0;
    return MT_OK;
}

static mt_status seq_add(unpickler *u, uint32_t container, const uint32_t *items, uint32_t n)
{
    obj *o = &u->objs[container];
    if (n > MAX_REFS - u->n_refs)
        return fail(u, "more than %u container items: not a state dict", MAX_REFS);
    if (!grow(&o->u.seq.items, &o->u.seq.cap, o->u.seq.n + n, sizeof *items, MAX_REFS))
        return nomem(u);
    if (n)
        memcpy(o->u.seq.items + o->u.seq.n, items, n * sizeof *items);
    o->u.seq.n += n;
    u->n_refs += n;
    return MT_OK;
}

/* A new tuple of items[0, n), pushed.  items may point into the stack above
 * its new top: they are copied before the push can overwrite them. */
static mt_status push_tuple(unpickler *u, const uint32_t *items, uint32_t n)
{
    uint32_t copy[3], idx = 0, *tmp = n <= 3 ? copy : malloc(n * sizeof *tmp);
    if (!tmp)
        return nomem(u);
    if (n)
        memcpy(tmp, items, n * sizeof *tmp);
    mt_status st = new_obj(u, O_TUPLE, &idx);
    if (st == MT_OK)
        st = seq_add(u, idx, tmp, n);
    if (st == MT_OK)
        st = push(u, idx);
    if (tmp != copy)
        free(tmp);
    return st;
}

/* ---- reading the input -------------------------------------------------------------- */
static int take(unpickler *u, size_t n, const uint8_t **out)
{
    if (n > u->n - u->at)
        return 0;
    *out = u->p + u->at;
    u->at += n;
    return 1;
}

static mt_status read_uint(unpickler *u, int bytes, uint64_t *v)
{
    const uint8_t *b;
    if (!take(u, (size_t)bytes, &b))
        return fail(u, "truncated");
    *v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        *v = *v << 8 | b[i];
    return MT_OK;
}

/* A GLOBAL argument: bytes up to '\n'. */
static mt_status read_line(unpickler *u, const char **s, size_t *len)
{
    size_t room = u->n - u->at;
    const uint8_t *start = u->p + u->at, *nl = memchr(start, '\n', room > MAX_STRING ? MAX_STRING + 1 : room);
    if (!nl)
        return fail(u, room > MAX_STRING ? "GLOBAL name longer than the limit" : "truncated GLOBAL");
    *len = (size_t)(nl - start);
    *s = (const char *)start;
    u->at += *len + 1;
    return MT_OK;
}

/* ---- opcodes: values ---------------------------------------------------------------- */
static mt_status op_int(unpickler *u, int64_t v)
{
    obj *o;
    mt_status st = push_new(u, O_INT, &o);
    if (st == MT_OK)
        o->u.i = v;
    return st;
}

/* LONG1: n little-endian two's-complement bytes; we take up to 8. */
static mt_status op_long1(unpickler *u)
{
    uint64_t n = 0, v = 0;
    mt_status st = read_uint(u, 1, &n);
    if (st != MT_OK)
        return st;
    if (n > 8)
        return fail(u, "LONG1 of %u bytes: integer too large", (unsigned)n);
    if (n == 0)
        return op_int(u, 0);
    if ((st = read_uint(u, (int)n, &v)) != MT_OK)
        return st;
    if (n < 8 && (v >> (8 * n - 1)) & 1)
        v |= ~(uint64_t)0 << (8 * n);           /* sign-extend */
    int64_t s;
    memcpy(&s, &v, sizeof s);                   /* two's complement, without implementation-defined casts */
    return op_int(u, s);
}

static mt_status op_unicode(unpickler *u, int len_bytes)
{
    uint64_t len = 0;
    const uint8_t *s;
    mt_status st = read_uint(u, len_bytes, &len);
    if (st != MT_OK)
        return st;
    if (len > MAX_STRING)
        return fail(u, "string of %llu bytes (limit %u)", (unsigned long long)len, MAX_STRING);
    if (!take(u, (size_t)len, &s))
        return fail(u, "truncated string");
    obj *o;
    if ((st = push_new(u, O_STR, &o)) == MT_OK) {
        o->u.str.s = s;
        o->u.str.len = (uint32_t)len;
    }
    return st;
}

static int str_is(const obj *o, const char *s)
{
    return o->kind == O_STR && o->u.str.len == strlen(s) && !memcmp(o->u.str.s, s, o->u.str.len);
}

/* The allow-list: anything else names itself and is refused. */
static mt_status push_global(unpickler *u, const char *mod, size_t mlen, const char *name, size_t nlen)
{
    for (int g = 0; g < N_GLOBALS; g++)
        if (strlen(GLOBALS[g].module) == mlen && !memcmp(GLOBALS[g].module, mod, mlen) &&
            strlen(GLOBALS[g].name) == nlen && !memcmp(GLOBALS[g].name, name, nlen)) {
            obj *o;
            mt_status st = push_new(u, O_GLOBAL, &o);
            if (st == MT_OK)
                o->u.global = g;
            return st;
        }
    int ml = mlen > 80 ? 80 : (int)mlen, nl = nlen > 80 ? 80 : (int)nlen;
    return fail(u, "the pickle imports '%.*s %.*s', which a torch state dict never needs: refused (nothing "
                "is imported or run)", ml, mod, nl, name);
}

static mt_status op_global(unpickler *u)
{
    const char *mod = NULL, *name = NULL;
    size_t mlen = 0, nlen = 0;
    mt_status st = read_line(u, &mod, &mlen);
    if (st == MT_OK)
        st = read_line(u, &name, &nlen);
    return st == MT_OK ? push_global(u, mod, mlen, name, nlen) : st;
}

static mt_status op_stack_global(unpickler *u)
{
    uint32_t n = 0, m = 0;
    mt_status st = pop2(u, &n, &m);
    if (st != MT_OK)
        return st;
    const obj *mo = &u->objs[m], *no = &u->objs[n];
    if (mo->kind != O_STR || no->kind != O_STR)
        return fail(u, "STACK_GLOBAL needs two strings");
    return push_global(u, (const char *)mo->u.str.s, mo->u.str.len, (const char *)no->u.str.s, no->u.str.len);
}

/* ---- opcodes: memo ------------------------------------------------------------------ */
static mt_status memo_put(unpickler *u, uint64_t i)
{
    uint32_t idx = 0;
    size_t old = u->cap_memo;
    mt_status st = top(u, &idx);
    if (st != MT_OK)
        return st;
    if (i >= MAX_MEMO)
        return fail(u, "memo index %llu over the limit %u", (unsigned long long)i, MAX_MEMO);
    if (!grow(&u->memo, &u->cap_memo, (uint32_t)i + 1, sizeof *u->memo, MAX_MEMO))
        return nomem(u);
    for (size_t k = old; k < u->cap_memo; k++)
        u->memo[k] = NONE_IDX;
    u->n_memo += u->memo[i] == NONE_IDX;
    u->memo[i] = idx;
    return MT_OK;
}

static mt_status memo_get(unpickler *u, uint64_t i)
{
    if (i >= u->cap_memo || u->memo[i] == NONE_IDX)
        return fail(u, "memo index %llu was never stored", (unsigned long long)i);
    return push(u, u->memo[i]);
}

/* MEMOIZE stores at the memo's length, Python's len(memo): the slots filled so far. */
static mt_status op_memoize(unpickler *u)
{
    return memo_put(u, u->n_memo);
}

/* ---- opcodes: containers ------------------------------------------------------------- */
static mt_status op_tuple_n(unpickler *u, uint32_t n)
{
    if (u->n_stack - u->floor < n)
        return fail(u, "stack underflow");
    u->n_stack -= n;
    return push_tuple(u, u->stack + u->n_stack, n);
}

static mt_status op_tuple_mark(unpickler *u)
{
    uint32_t from = 0, n = u->n_stack;
    mt_status st = pop_mark(u, &from);
    if (st != MT_OK)
        return st;
    u->n_stack = from;
    return push_tuple(u, u->stack + from, n - from);
}

/* SETITEMS / APPENDS: the container sits just below the mark. */
static mt_status op_fill_mark(unpickler *u, okind want)
{
    uint32_t from = 0, n = u->n_stack;
    mt_status st = pop_mark(u, &from);
    if (st != MT_OK)
        return st;
    u->n_stack = from;
    if (from <= u->floor)
        return fail(u, "stack underflow");
    uint32_t c = u->stack[from - 1];
    if (u->objs[c].kind != want)
        return fail(u, "%s on something that is not a %s", want == O_DICT ? "SETITEMS" : "APPENDS",
                    want == O_DICT ? "dict" : "list");
    if (want == O_DICT && (n - from) % 2)
        return fail(u, "SETITEMS with an odd number of items");
    return seq_add(u, c, u->stack + from, n - from);
}

/* SETITEM / APPEND: the container, then 2 or 1 items. */
static mt_status op_fill(unpickler *u, okind want, uint32_t n)
{
    if (u->n_stack - u->floor < n + 1)
        return fail(u, "stack underflow");
    u->n_stack -= n;
    uint32_t c = u->stack[u->n_stack - 1];
    if (u->objs[c].kind != want)
        return fail(u, "%s on something that is not a %s", want == O_DICT ? "SETITEM" : "APPEND",
                    want == O_DICT ? "dict" : "list");
    return seq_add(u, c, u->stack + u->n_stack, n);
}

/* BUILD: only the OrderedDict's attributes that nn.Module.state_dict() sets,
 * i.e. a state dict {"_metadata": ...}; they are accepted and ignored (version
 * numbers of each submodule's layout, not weights). */
static mt_status op_build(unpickler *u)
{
    uint32_t state = 0, target = 0;
    mt_status st = pop(u, &state);
    if (st == MT_OK)
        st = top(u, &target);
    if (st != MT_OK)
        return st;
    const obj *s = &u->objs[state];
    if (u->objs[target].kind != O_DICT || s->kind != O_DICT)
        return fail(u, "BUILD other than an OrderedDict's _metadata");
    for (uint32_t k = 0; k < s->u.seq.n; k += 2)
        if (!str_is(&u->objs[s->u.seq.items[k]], "_metadata"))
            return fail(u, "BUILD sets an attribute other than _metadata");
    return MT_OK;
}

/* ---- opcodes: persistent ids and REDUCE ---------------------------------------------- */
static int seq_item(const unpickler *u, const obj *t, uint32_t i, okind kind)
{
    return i < t->u.seq.n && u->objs[t->u.seq.items[i]].kind == kind;
}

static const obj *item(const unpickler *u, const obj *t, uint32_t i)
{
    return &u->objs[t->u.seq.items[i]];
}

/* ('storage', torch.<T>Storage, key, location, numel) -> a storage reference. */
static mt_status op_persid(unpickler *u)
{
    uint32_t pid = 0;
    mt_status st = pop(u, &pid);
    if (st != MT_OK)
        return st;
    const obj *t = &u->objs[pid];
    if (t->kind != O_TUPLE || t->u.seq.n != 5 || !str_is(item(u, t, 0), "storage") ||
        !seq_item(u, t, 1, O_GLOBAL) || !seq_item(u, t, 2, O_STR) || !seq_item(u, t, 3, O_STR) ||
        !seq_item(u, t, 4, O_INT) || item(u, t, 4)->u.i < 0)
        return fail(u, "persistent id is not ('storage', type, key, location, numel)");
    int g = item(u, t, 1)->u.global;
    if (GLOBALS[g].kind != G_STORAGE)
        return fail(u, "persistent id names %s.%s, not a storage type", GLOBALS[g].module, GLOBALS[g].name);
    if (GLOBALS[g].dtype == MT_DT_UNKNOWN)
        return fail(u, "a storage of type torch.%s (%s): only real dtypes can be read", GLOBALS[g].name,
                    GLOBALS[g].what);
    uint32_t key = t->u.seq.items[2];
    const obj *k = &u->objs[key];
    if (!k->u.str.len || memchr(k->u.str.s, 0, k->u.str.len) || memchr(k->u.str.s, '/', k->u.str.len))
        return fail(u, "storage key is empty or holds '/' or NUL");     /* it names a member: data/<key> */
    uint64_t numel = (uint64_t)item(u, t, 4)->u.i;
    obj *o;
    if ((st = push_new(u, O_STORAGE, &o)) == MT_OK) {
        o->u.storage.global = g;
        o->u.storage.key = key;
        o->u.storage.numel = numel;
    }
    return st;
}

/* size and stride tuples of equal length, each element an int >= 0 (and
 * below 2^48: no real dimension or stride comes near, and products stay safe). */
static mt_status read_dims(unpickler *u, const obj *size, const obj *stride, view *v)
{
    if (size->kind != O_TUPLE || stride->kind != O_TUPLE || size->u.seq.n != stride->u.seq.n)
        return fail(u, "_rebuild_tensor_v2: size and stride must be tuples of one length");
    if (size->u.seq.n > MT_MAX_RANK)
        return fail(u, "_rebuild_tensor_v2: rank %u exceeds %d", size->u.seq.n, MT_MAX_RANK);
    v->rank = (int)size->u.seq.n;
    for (int d = 0; d < v->rank; d++) {
        const obj *a = item(u, size, (uint32_t)d), *b = item(u, stride, (uint32_t)d);
        if (a->kind != O_INT || b->kind != O_INT || a->u.i < 0 || b->u.i < 0 ||
            a->u.i >= ((int64_t)1 << 48) || b->u.i >= ((int64_t)1 << 48))
            return fail(u, "_rebuild_tensor_v2: bad size or stride in dimension %d", d);
        v->size[d] = a->u.i;
        v->stride[d] = b->u.i;
    }
    return MT_OK;
}

/* _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
 * backward_hooks[, metadata]) -> a view of the storage. */
static mt_status rebuild_tensor(unpickler *u, const obj *args)
{
    if (args->u.seq.n < 6 || args->u.seq.n > 7 || !seq_item(u, args, 0, O_STORAGE) ||
        !seq_item(u, args, 1, O_INT) || item(u, args, 1)->u.i < 0 || !seq_item(u, args, 5, O_DICT) ||
        (!seq_item(u, args, 4, O_BOOL) && !seq_item(u, args, 4, O_INT)))
        return fail(u, "_rebuild_tensor_v2 called with unexpected arguments");
    view v = {.storage = args->u.seq.items[0], .offset = (uint64_t)item(u, args, 1)->u.i};
    mt_status st = read_dims(u, item(u, args, 2), item(u, args, 3), &v);
    if (st != MT_OK)
        return st;
    if (!grow(&u->views, &u->cap_views, u->n_views + 1, sizeof *u->views, MAX_OBJECTS))
        return nomem(u);
    obj *o;
    if ((st = push_new(u, O_TENSOR, &o)) == MT_OK) {
        u->views[u->n_views] = v;
        o->u.tensor = u->n_views++;
    }
    return st;
}

static mt_status op_reduce(unpickler *u)
{
    uint32_t a = 0, f = 0;
    mt_status st = pop2(u, &a, &f);
    if (st != MT_OK)
        return st;
    const obj *fn = &u->objs[f], *args = &u->objs[a];
    if (fn->kind != O_GLOBAL || args->kind != O_TUPLE)
        return fail(u, "REDUCE of something that is not an allowed global with a tuple");
    switch (GLOBALS[fn->u.global].kind) {
    case G_ORDERED_DICT:
        if (args->u.seq.n != 0)
            return fail(u, "OrderedDict called with arguments");
        return push_new(u, O_DICT, NULL);
    case G_REBUILD_TENSOR:
        return rebuild_tensor(u, args);
    case G_REBUILD_PARAM:               /* (data, requires_grad, backward_hooks): the data */
        if (args->u.seq.n != 3 || !seq_item(u, args, 0, O_TENSOR))
            return fail(u, "_rebuild_parameter called with unexpected arguments");
        return push(u, args->u.seq.items[0]);
    case G_STORAGE:
        break;
    }
    return fail(u, "REDUCE calls torch.%s, which a state dict never calls", GLOBALS[fn->u.global].name);
}

/* ---- the machine ------------------------------------------------------------------- */
static mt_status op_mark(unpickler *u)
{
    if (u->n_marks >= MAX_MARKS)
        return fail(u, "more than %d nested MARKs", MAX_MARKS);
    u->marks[u->n_marks++] = u->n_stack;
    u->floor = u->n_stack;
    return MT_OK;
}

static mt_status op_proto(unpickler *u)
{
    uint64_t v = 0;
    mt_status st = read_uint(u, 1, &v);
    if (st == MT_OK && (v < 2 || v > 5))
        return fail(u, "pickle protocol %u (torch.save writes 2)", (unsigned)v);
    return st;
}

/* FRAME (protocol 4) only announces how many bytes follow: nothing to do but check it. */
static mt_status op_frame(unpickler *u)
{
    uint64_t len = 0;
    mt_status st = read_uint(u, 8, &len);
    if (st == MT_OK && len > u->n - u->at)
        return fail(u, "FRAME of %llu bytes runs past the end", (unsigned long long)len);
    return st;
}

static mt_status simple(unpickler *u, okind kind, int64_t v)
{
    obj *o;
    mt_status st = push_new(u, kind, &o);
    if (st == MT_OK)
        o->u.i = v;
    return st;
}

/* One opcode; *stop set at STOP. */
static mt_status step(unpickler *u, int *stop)
{
    uint64_t v = 0;
    mt_status st;
    u->op_at = u->at;
    if (u->at >= u->n)
        return fail(u, "truncated: no STOP");
    uint8_t op = u->p[u->at++];
    switch (op) {
    case 0x80: return op_proto(u);
    case 0x95: return op_frame(u);
    case '}':  return simple(u, O_DICT, 0);
    case ']':  return simple(u, O_LIST, 0);
    case ')':  return push_tuple(u, NULL, 0);
    case 'N':  return simple(u, O_NONE, 0);
    case 0x88: return simple(u, O_BOOL, 1);
    case 0x89: return simple(u, O_BOOL, 0);
    case '(':  return op_mark(u);
    case 'X':  return op_unicode(u, 4);
    case 0x8c: return op_unicode(u, 1);
    case 'q':  return (st = read_uint(u, 1, &v)) ? st : memo_put(u, v);
    case 'r':  return (st = read_uint(u, 4, &v)) ? st : memo_put(u, v);
    case 0x94: return op_memoize(u);
    case 'h':  return (st = read_uint(u, 1, &v)) ? st : memo_get(u, v);
    case 'j':  return (st = read_uint(u, 4, &v)) ? st : memo_get(u, v);
    case 'J':  return (st = read_uint(u, 4, &v)) ? st : op_int(u, (int32_t)(uint32_t)v);
    case 'K':  return (st = read_uint(u, 1, &v)) ? st : op_int(u, (int64_t)v);
    case 'M':  return (st = read_uint(u, 2, &v)) ? st : op_int(u, (int64_t)v);
    case 0x8a: return op_long1(u);
    case 't':  return op_tuple_mark(u);
    case 0x85: return op_tuple_n(u, 1);
    case 0x86: return op_tuple_n(u, 2);
    case 0x87: return op_tuple_n(u, 3);
    case 'c':  return op_global(u);
    case 0x93: return op_stack_global(u);
    case 'R':  return op_reduce(u);
    case 'Q':  return op_persid(u);
    case 's':  return op_fill(u, O_DICT, 2);
    case 'u':  return op_fill_mark(u, O_DICT);
    case 'a':  return op_fill(u, O_LIST, 1);
    case 'e':  return op_fill_mark(u, O_LIST);
    case 'b':  return op_build(u);
    case '.':  *stop = 1; return MT_OK;
    }
    if (op >= 0x20 && op < 0x7f)
        return fail(u, "pickle opcode '%c' is not one a torch state dict uses", op);
    return fail(u, "pickle opcode 0x%02x is not one a torch state dict uses", op);
}

/* ---- the result ----------------------------------------------------------------------- */
static char *dup_str(const obj *o)
{
    char *s = malloc((size_t)o->u.str.len + 1);
    if (s) {
        memcpy(s, o->u.str.s, o->u.str.len);
        s[o->u.str.len] = 0;
    }
    return s;
}

/* One name -> view pair of the final dict into t. */
static mt_status make_tensor(unpickler *u, const obj *key, const obj *val, mt_pickle_tensor *t)
{
    if (key->kind != O_STR || memchr(key->u.str.s, 0, key->u.str.len))
        return fail(u, "a state-dict key is not a string (or holds a NUL byte)");
    if (val->kind != O_TENSOR)
        return fail(u, "state-dict entry '%.*s' is not a tensor", (int)(key->u.str.len > 200 ? 200 : key->u.str.len),
                    (const char *)key->u.str.s);
    const view *v = &u->views[val->u.tensor];
    const obj *s = &u->objs[v->storage], *sk = &u->objs[s->u.storage.key];
    if (!(t->name = dup_str(key)) || !(t->storage_key = dup_str(sk)))
        return nomem(u);
    const global_def *g = &GLOBALS[s->u.storage.global];
    t->storage_type = g->name;
    t->dtype = g->dtype;
    t->storage_numel = s->u.storage.numel;
    t->offset = v->offset;
    t->rank = v->rank;
    memcpy(t->size, v->size, sizeof t->size);
    memcpy(t->stride, v->stride, sizeof t->stride);
    return MT_OK;
}

static mt_status make_result(unpickler *u, uint32_t root, mt_pickle_sd **out)
{
    const obj *d = &u->objs[root];
    if (d->kind != O_DICT)
        return fail(u, "the pickle holds no dict: not a state dict");
    mt_status st = MT_OK;
    mt_pickle_sd *sd = calloc(1, sizeof *sd);
    if (!sd || !(sd->t = calloc(d->u.seq.n / 2 + 1, sizeof *sd->t))) {
        st = nomem(u);
        goto done;
    }
    for (uint32_t k = 0; k + 1 < d->u.seq.n && st == MT_OK; k += 2, sd->n++)
        st = make_tensor(u, item(u, d, k), item(u, d, k + 1), &sd->t[sd->n]);
    if (st == MT_OK) {
        *out = sd;
        sd = NULL; /* the caller owns it now */
    }
done:
    mt_pickle_free(sd);
    return st;
}

static void unpickler_free(unpickler *u)
{
    for (uint32_t i = 0; i < u->n_objs; i++) {
        okind k = u->objs[i].kind;
        if (k == O_TUPLE || k == O_LIST || k == O_DICT)
            free(u->objs[i].u.seq.items);
    }
    free(u->objs);
    free(u->views);
    free(u->stack);
    free(u->memo);
}

/* ---- API --------------------------------------------------------------------------------- */
mt_status mt_pickle_state_dict(const char *where, const uint8_t *p, size_t n, mt_pickle_sd **out, mt_err *err)
{
    *out = NULL;
    unpickler u = {.where = where, .p = p, .n = n, .err = err};
    /* allocated up front: `stack + i` of an empty stack must not be NULL + 0 */
    mt_status st = grow(&u.stack, &u.cap_stack, 64, sizeof *u.stack, MAX_STACK) ? MT_OK : nomem(&u);
    int stop = 0;
    while (st == MT_OK && !stop)
        st = step(&u, &stop);
    uint32_t root = 0;
    if (st == MT_OK && u.n_marks)
        st = fail(&u, "STOP inside an open MARK");
    if (st == MT_OK && (st = pop(&u, &root)) == MT_OK && u.n_stack)
        st = fail(&u, "STOP with more than the result on the stack");
    if (st == MT_OK)
        st = make_result(&u, root, out);
    unpickler_free(&u);
    return st;
}

int mt_pickle_count(const mt_pickle_sd *sd)
{
    return sd->n;
}

const mt_pickle_tensor *mt_pickle_at(const mt_pickle_sd *sd, int i)
{
    return i >= 0 && i < sd->n ? &sd->t[i] : NULL;
}

void mt_pickle_free(mt_pickle_sd *sd)
{
    if (!sd)
        return;
    for (int i = 0; i < sd->n; i++) {
        free(sd->t[i].name);
        free(sd->t[i].storage_key);
    }
    free(sd->t);
    free(sd);
}
