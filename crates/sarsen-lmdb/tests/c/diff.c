/* A seeded random program over the LMDB API that prints the outcome of
 * every call: built once against real LMDB and once against Sarsen's
 * liblmdb, the two outputs must be equal (tests/c_programs.rs).
 *
 * Usage: diff SEED OPS. Runs in a directory holding an empty ./testdb.
 * Only behaviour LMDB defines is compared: after a cursor move fails, or
 * after a write that does not go through the cursor, the next cursor
 * operation is an absolute one (FIRST, LAST, SET*, GET_BOTH*). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lmdb.h"

static unsigned long long rng;
static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)((rng >> 33) % n);
}

#define CHECK(expr)                                                         \
	do {                                                                    \
		int rc_ = (expr);                                                   \
		if (rc_) {                                                          \
			fprintf(stderr, "%s: %s\n", #expr, mdb_strerror(rc_));          \
			exit(2);                                                        \
		}                                                                   \
	} while (0)

static char kbuf[32], vbuf[64];

static MDB_val mkkey(void)
{
	MDB_val k;
	k.mv_size = (size_t)sprintf(kbuf, "k%03u", rnd(40));
	k.mv_data = kbuf;
	return k;
}

static MDB_val mkval(int dup)
{
	MDB_val v;
	if (dup) {
		v.mv_size = (size_t)sprintf(vbuf, "v%02u", rnd(12));
	} else {
		unsigned n = 1 + rnd(40), i;
		for (i = 0; i < n; i++)
			vbuf[i] = (char)('a' + rnd(26));
		v.mv_size = n;
	}
	v.mv_data = vbuf;
	return v;
}

static void show(const char *what, int rc, const MDB_val *k, const MDB_val *v)
{
	printf("%s rc=%d", what, rc);
	if (rc == 0 || rc == MDB_KEYEXIST) {
		if (k)
			printf(" k=%.*s", (int)k->mv_size, (char *)k->mv_data);
		if (v)
			printf(" v=%.*s", (int)v->mv_size, (char *)v->mv_data);
	}
	printf("\n");
}

static void dump(MDB_env *env, MDB_dbi dbi, const char *name)
{
	MDB_txn *txn;
	MDB_cursor *c;
	MDB_val k, v;
	MDB_stat st;
	int rc;
	CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	CHECK(mdb_cursor_open(txn, dbi, &c));
	printf("dump %s:", name);
	while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0)
		printf(" %.*s=%.*s", (int)k.mv_size, (char *)k.mv_data, (int)v.mv_size, (char *)v.mv_data);
	printf(" end=%d\n", rc);
	mdb_cursor_close(c);
	CHECK(mdb_stat(txn, dbi, &st));
	printf("entries %s: %zu\n", name, (size_t)st.ms_entries);
	mdb_txn_abort(txn);
}

static const MDB_cursor_op relative[] = {MDB_NEXT, MDB_PREV, MDB_GET_CURRENT, MDB_NEXT_DUP,
	MDB_PREV_DUP, MDB_NEXT_NODUP, MDB_PREV_NODUP, MDB_FIRST_DUP, MDB_LAST_DUP};
static const char *const relname[] = {"NEXT", "PREV", "GET_CURRENT", "NEXT_DUP",
	"PREV_DUP", "NEXT_NODUP", "PREV_NODUP", "FIRST_DUP", "LAST_DUP"};

/* Some cursor operations on dbi; dup says whether it is DUPSORT. */
static void cursor_ops(MDB_txn *txn, MDB_dbi dbi, int dup, int write)
{
	MDB_cursor *c;
	MDB_val k, v;
	int positioned = 0, i, rc;
	size_t n;
	CHECK(mdb_cursor_open(txn, dbi, &c));
	for (i = 0; i < 12; i++) {
		unsigned r = positioned ? rnd(10) : rnd(4);
		if (r == 0) {
			rc = mdb_cursor_get(c, &k, &v, rnd(2) ? MDB_FIRST : MDB_LAST);
			show("c.FIRST/LAST", rc, &k, &v);
		} else if (r == 1) {
			MDB_cursor_op op = rnd(3) == 0 ? MDB_SET : rnd(2) ? MDB_SET_KEY : MDB_SET_RANGE;
			k = mkkey();
			rc = mdb_cursor_get(c, &k, &v, op);
			show(op == MDB_SET ? "c.SET" : op == MDB_SET_KEY ? "c.SET_KEY" : "c.SET_RANGE",
				rc, op == MDB_SET ? NULL : &k, &v);
		} else if (r == 2) {
			if (!dup && rnd(2)) {
				rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
				show("c.FIRST", rc, &k, &v);
			} else if (!dup) {
				k = mkkey();
				v = mkval(0);
				rc = mdb_cursor_get(c, &k, &v, MDB_GET_BOTH);
				show("c.GET_BOTH.plain", rc, NULL, &v);
			} else {
				MDB_cursor_op op = rnd(2) ? MDB_GET_BOTH : MDB_GET_BOTH_RANGE;
				k = mkkey();
				v = mkval(1);
				rc = mdb_cursor_get(c, &k, &v, op);
				show(op == MDB_GET_BOTH ? "c.GET_BOTH" : "c.GET_BOTH_RANGE", rc, NULL, &v);
			}
		} else if (r == 3) {
			rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
			show("c.LAST", rc, &k, &v);
		} else if (r <= 7) {
			unsigned j = rnd(dup ? 9 : 3);
			rc = mdb_cursor_get(c, &k, &v, relative[j]);
			show(relname[j], rc, &k, &v);
		} else if (r == 8) {
			rc = mdb_cursor_count(c, &n);
			printf("count rc=%d n=%zu\n", rc, rc ? (size_t)0 : n);
			continue;
		} else {
			if (!write)
				continue;
			if (rnd(2)) {
				rc = mdb_cursor_del(c, dup && rnd(3) == 0 ? MDB_NODUPDATA : 0);
				printf("c.del rc=%d\n", rc);
				/* LMDB's state after a DUPSORT delete is buggy: re-seek. */
				if (dup)
					rc = 1;
			} else {
				unsigned f = rnd(4);
				unsigned flags = f == 0 ? MDB_NOOVERWRITE : (f == 1 && dup) ? MDB_NODUPDATA
					: (f == 2 && !dup) ? MDB_CURRENT : 0;
				k = mkkey();
				if (flags == MDB_CURRENT) {
					/* The key must be the current one. */
					MDB_val cur;
					rc = mdb_cursor_get(c, &k, &cur, MDB_GET_CURRENT);
					printf("c.cur rc=%d\n", rc);
					if (rc == 0) {
						memcpy(kbuf, k.mv_data, k.mv_size);
						k.mv_data = kbuf;
					} else {
						flags = 0;
						k = mkkey();
					}
				}
				v = mkval(dup);
				rc = mdb_cursor_put(c, &k, &v, flags);
				printf("c.put f=%u ", flags);
				show("", rc, NULL, rc == MDB_KEYEXIST ? &v : NULL);
			}
		}
		positioned = rc == 0;
	}
	mdb_cursor_close(c);
}

/* The databases: plain, DUPSORT, DUPSORT|DUPFIXED, REVERSEKEY. */
static MDB_dbi dbs[4];
static const char *const dbname[] = {"plain", "dups", "fixed", "rev"};
static const unsigned dbflags[] = {0, MDB_DUPSORT, MDB_DUPSORT | MDB_DUPFIXED, MDB_REVERSEKEY};
/* MDB_INTEGERKEY (size_t keys) with MDB_DUPSORT|MDB_INTEGERDUP (size_t values). */
static MDB_dbi ints;

static void int_ops(MDB_txn *txn)
{
	size_t kk = rnd(30) * 1000003u, vv = rnd(8) * 65537u;
	MDB_val k = {sizeof(kk), &kk}, v = {sizeof(vv), &vv};
	MDB_cursor *c;
	int rc;
	unsigned r = rnd(4);
	if (r < 2) {
		rc = mdb_put(txn, ints, &k, &v, r ? MDB_NODUPDATA : 0);
		printf("int.put rc=%d\n", rc);
	} else if (r == 2) {
		rc = mdb_del(txn, ints, &k, rnd(2) ? &v : NULL);
		printf("int.del rc=%d\n", rc);
	} else {
		CHECK(mdb_cursor_open(txn, ints, &c));
		rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
		printf("int.range rc=%d", rc);
		while (rc == 0) {
			printf(" %zu:%zu", *(size_t *)k.mv_data, *(size_t *)v.mv_data);
			rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
		}
		printf(" end=%d\n", rc);
		mdb_cursor_close(c);
	}
}

/* Every value of one key of the DUPFIXED database through GET_MULTIPLE and
 * NEXT_MULTIPLE, concatenated (the batches themselves depend on pages). */
static void multiple(MDB_txn *txn)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc;
	CHECK(mdb_cursor_open(txn, dbs[2], &c));
	k = mkkey();
	rc = mdb_cursor_get(c, &k, &v, MDB_SET);
	printf("multi %s set=%d:", kbuf, rc);
	if (rc == 0) {
		rc = mdb_cursor_get(c, &k, &v, MDB_GET_MULTIPLE);
		while (rc == 0) {
			printf(" %.*s", (int)v.mv_size, (char *)v.mv_data);
			rc = mdb_cursor_get(c, &k, &v, MDB_NEXT_MULTIPLE);
		}
	}
	printf(" end=%d\n", rc);
	mdb_cursor_close(c);
}

/* n random operations in write transaction txn; depth < 2 may nest. */
static void ops(MDB_env *env, MDB_txn *txn, int n, int depth)
{
	MDB_val k, v;
	int i, rc;
	for (i = 0; i < n; i++) {
		unsigned r = rnd(12), kind = rnd(4);
		int dup = kind == 1 || kind == 2;
		if (r < 4) {
			unsigned f = rnd(5);
			unsigned flags = f == 0 ? MDB_NOOVERWRITE : (f == 1 && dup) ? MDB_NODUPDATA
				: (f == 2 && !dup) ? MDB_APPEND : 0;
			k = mkkey();
			v = mkval(dup);
			rc = mdb_put(txn, dbs[kind], &k, &v, flags);
			printf("put.%s f=%u ", dbname[kind], flags);
			show("", rc, NULL, rc == MDB_KEYEXIST ? &v : NULL);
		} else if (r < 6) {
			k = mkkey();
			rc = mdb_get(txn, dbs[kind], &k, &v);
			show("get", rc, NULL, &v);
		} else if (r < 8) {
			MDB_val d;
			k = mkkey();
			d = mkval(dup);
			rc = mdb_del(txn, dbs[kind], &k, dup && rnd(2) ? &d : NULL);
			printf("del rc=%d\n", rc);
		} else if (r < 10) {
			cursor_ops(txn, dbs[kind], dup, 1);
		} else if (r == 10) {
			if (rnd(2))
				multiple(txn);
			else
				int_ops(txn);
		} else if (depth < 2 && rnd(8)) {
			MDB_txn *child;
			CHECK(mdb_txn_begin(env, txn, 0, &child));
			printf("child %d {\n", depth + 1);
			ops(env, child, 6, depth + 1);
			if (rnd(2)) {
				mdb_txn_abort(child);
				printf("} abort\n");
			} else {
				CHECK(mdb_txn_commit(child));
				printf("} commit\n");
			}
		} else if (depth == 0) {
			/* Empty one database (mdb_drop with del 0). */
			rc = mdb_drop(txn, dbs[kind], 0);
			printf("drop %s rc=%d\n", dbname[kind], rc);
		}
	}
}

int main(int argc, char **argv)
{
	MDB_env *env;
	MDB_txn *txn, *idle;
	int nops, t, i;
	if (argc != 3)
		return 2;
	rng = strtoull(argv[1], NULL, 10);
	nops = atoi(argv[2]);
	CHECK(mdb_env_create(&env));
	CHECK(mdb_env_set_maxdbs(env, 8));
	CHECK(mdb_env_set_mapsize(env, 1 << 28));
	CHECK(mdb_env_open(env, "./testdb", MDB_NOSYNC, 0664));
	CHECK(mdb_txn_begin(env, NULL, 0, &txn));
	for (i = 0; i < 4; i++)
		CHECK(mdb_dbi_open(txn, dbname[i], MDB_CREATE | dbflags[i], &dbs[i]));
	CHECK(mdb_dbi_open(txn, "ints", MDB_CREATE | MDB_INTEGERKEY | MDB_DUPSORT | MDB_INTEGERDUP, &ints));
	CHECK(mdb_txn_commit(txn));
	/* A read transaction reset and renewed between write transactions. */
	CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &idle));
	mdb_txn_reset(idle);
	for (t = 0; t < nops; t++) {
		unsigned kind;
		CHECK(mdb_txn_begin(env, NULL, 0, &txn));
		ops(env, txn, 20, 0);
		if (rnd(6) == 0) {
			mdb_txn_abort(txn);
			printf("abort\n");
		} else {
			CHECK(mdb_txn_commit(txn));
			printf("commit\n");
		}
		CHECK(mdb_txn_renew(idle));
		kind = rnd(4);
		cursor_ops(idle, dbs[kind], kind == 1 || kind == 2, 0);
		mdb_txn_reset(idle);
		for (i = 0; i < 4; i++)
			dump(env, dbs[i], dbname[i]);
	}
	mdb_txn_abort(idle);
	mdb_env_close(env);
	return 0;
}
