/* mdb_set_compare and mdb_set_dupsort: a named database ordered by number
 * (keys are decimal strings) and a DUPSORT one whose values sort
 * descending, in one environment, and in another (with no named database:
 * its names would be compared by number too) the main database ordered by
 * number; each given its function after mdb_dbi_open in every transaction
 * (as LMDB requires), across a reopen of the environments. It prints every
 * outcome; tests/c_programs.rs builds it against real LMDB and against
 * Sarsen's liblmdb.so and compares the two outputs. Run in a directory
 * holding an empty ./testdb. */
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include "lmdb.h"

#define CHECK(expr)                                                          \
	do {                                                                     \
		int rc_ = (expr);                                                    \
		if (rc_) {                                                           \
			fprintf(stderr, "%s: %s\n", #expr, mdb_strerror(rc_));          \
			return 1;                                                        \
		}                                                                    \
	} while (0)

/* Decimal strings as numbers. */
static int by_number(const MDB_val *a, const MDB_val *b)
{
	char x[32], y[32];
	long p, q;
	snprintf(x, sizeof x, "%.*s", (int)a->mv_size, (char *)a->mv_data);
	snprintf(y, sizeof y, "%.*s", (int)b->mv_size, (char *)b->mv_data);
	p = atol(x);
	q = atol(y);
	return p < q ? -1 : p > q;
}

/* Bytewise, descending. */
static int descending(const MDB_val *a, const MDB_val *b)
{
	size_t n = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
	int c = memcmp(a->mv_data, b->mv_data, n);
	if (c == 0)
		c = a->mv_size < b->mv_size ? -1 : a->mv_size > b->mv_size;
	return -c;
}

static MDB_val val(const char *s)
{
	MDB_val v;
	v.mv_size = strlen(s);
	v.mv_data = (void *)s;
	return v;
}

static void walk(MDB_txn *txn, MDB_dbi dbi, const char *what)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc;
	if (mdb_cursor_open(txn, dbi, &c)) {
		printf("%s: no cursor\n", what);
		return;
	}
	printf("%s:", what);
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT))
		printf(" %.*s=%.*s", (int)k.mv_size, (char *)k.mv_data, (int)v.mv_size,
		       (char *)v.mv_data);
	printf(" (%d)\n", rc);
	k = val("11");
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	printf("  set_range 11 rc=%d", rc);
	if (rc == 0)
		printf(" %.*s", (int)k.mv_size, (char *)k.mv_data);
	k = val("7");
	rc = mdb_cursor_get(c, &k, &v, MDB_SET);
	printf("  set 7 rc=%d\n", rc);
	mdb_cursor_close(c);
}

static int open_all(MDB_txn *txn, MDB_txn *txn2, unsigned flags, MDB_dbi *nums, MDB_dbi *dups,
		    MDB_dbi *main)
{
	CHECK(mdb_dbi_open(txn, "nums", flags, nums));
	CHECK(mdb_set_compare(txn, *nums, by_number));
	CHECK(mdb_dbi_open(txn, "dups", flags | MDB_DUPSORT, dups));
	CHECK(mdb_set_dupsort(txn, *dups, descending));
	CHECK(mdb_dbi_open(txn2, NULL, 0, main));
	CHECK(mdb_set_compare(txn2, *main, by_number));
	return 0;
}

int main(void)
{
	MDB_env *env, *env2;
	MDB_txn *txn, *txn2;
	MDB_dbi nums, dups, main;
	MDB_val k, v;
	const char *keys[] = {"1", "9", "10", "100", "25", "7", "300"};
	const char *vals[] = {"b", "d", "a", "c", "e"};
	int i, round, rc;

	mkdir("./testdb2", 0755);
	for (round = 0; round < 2; round++) {
		CHECK(mdb_env_create(&env));
		CHECK(mdb_env_set_maxdbs(env, 4));
		CHECK(mdb_env_open(env, "./testdb", MDB_NOSYNC, 0644));
		CHECK(mdb_env_create(&env2));
		CHECK(mdb_env_open(env2, "./testdb2", MDB_NOSYNC, 0644));
		CHECK(mdb_txn_begin(env, NULL, 0, &txn));
		CHECK(mdb_txn_begin(env2, NULL, 0, &txn2));
		if (open_all(txn, txn2, MDB_CREATE, &nums, &dups, &main))
			return 1;
		for (i = 0; i < 7; i++) {
			char buf[16];
			snprintf(buf, sizeof buf, "%s%d", keys[i], round);
			k = val(round ? buf : keys[i]);
			v = val("v");
			CHECK(mdb_put(txn, nums, &k, &v, 0));
			CHECK(mdb_put(txn2, main, &k, &v, 0));
		}
		for (i = 0; i < 5; i++) {
			k = val(round ? "k2" : "k");
			v = val(vals[i]);
			CHECK(mdb_put(txn, dups, &k, &v, 0));
		}
		k = val("25");
		rc = mdb_get(txn, nums, &k, &v);
		printf("round %d get 25 rc=%d\n", round, rc);
		k = val("k");
		v = val("c");
		rc = mdb_del(txn, dups, &k, &v);
		printf("del k=c rc=%d\n", rc);
		CHECK(mdb_txn_commit(txn));
		CHECK(mdb_txn_commit(txn2));

		CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
		CHECK(mdb_txn_begin(env2, NULL, MDB_RDONLY, &txn2));
		if (open_all(txn, txn2, 0, &nums, &dups, &main))
			return 1;
		walk(txn, nums, "nums");
		walk(txn, dups, "dups");
		walk(txn2, main, "main");
		mdb_txn_abort(txn);
		mdb_txn_abort(txn2);
		mdb_env_close(env);
		mdb_env_close(env2);
	}
	return 0;
}
