/* MDB_PREV_MULTIPLE on a DUPFIXED database: the checks (NULL data, not
 * DUPFIXED), an unpositioned cursor, a key with one value, a key whose
 * values fit on one page, a key whose values span pages (walked backwards
 * to its first value, from its last and from the middle), what the cursor
 * stands on afterwards (MDB_GET_CURRENT, MDB_NEXT_DUP, MDB_NEXT_MULTIPLE),
 * in a read and in a write transaction.
 *
 * Which values share a page differs between LMDB and Sarsen, so the
 * program prints only what does not depend on it: return codes where both
 * agree on one page or many (10 values of 8 bytes, or 3000), and whether
 * each run returned is a contiguous run of the key's values, ends right
 * before the one the cursor stood on (or the previous run), and so on.
 * tests/c_programs.rs builds it against real LMDB and against Sarsen's
 * liblmdb.so and compares the outputs. Run in a directory holding an
 * empty ./testdb. */
#include <stdio.h>
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

#define MANY 3000
#define FEW 10
#define VSIZE 8

static char vbuf[VSIZE + 1];

/* The i-th value of a key: 8 digits, bytewise in numeric order. */
static MDB_val nth(int i)
{
	MDB_val v;
	snprintf(vbuf, sizeof vbuf, "%08d", i * 3);
	v.mv_size = VSIZE;
	v.mv_data = vbuf;
	return v;
}

/* The rank of value v (-1 if malformed). */
static int rank(const char *p)
{
	char b[VSIZE + 1];
	memcpy(b, p, VSIZE);
	b[VSIZE] = 0;
	return atoi(b) / 3;
}

static MDB_val str(const char *s)
{
	MDB_val v;
	v.mv_size = strlen(s);
	v.mv_data = (void *)s;
	return v;
}

/* A returned run: its first and last ranks, -1 if not contiguous. */
static int run(MDB_val *d, int *first, int *last)
{
	size_t n = d->mv_size / VSIZE, i;
	const char *p = d->mv_data;
	if (n == 0 || d->mv_size % VSIZE)
		return -1;
	*first = rank(p);
	for (i = 1; i < n; i++)
		if (rank(p + i * VSIZE) != *first + (int)i)
			return -1;
	*last = *first + (int)n - 1;
	return 0;
}

/* Where the cursor stands: key and the rank of its value. */
static void current(MDB_cursor *c, const char *what)
{
	MDB_val k, v;
	int rc = mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT);
	printf("  %s: current rc=%d", what, rc);
	if (rc == 0)
		printf(" %.*s/%d", (int)k.mv_size, (char *)k.mv_data, rank(v.mv_data));
	printf("\n");
}

/* Whether the cursor stands on the value of rank r. */
static int on(MDB_cursor *c, int r)
{
	MDB_val k, v;
	return mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT) == 0 && rank(v.mv_data) == r;
}

/* MDB_PREV_MULTIPLE from (key, rank `from`) down to the first value:
 * the first run ends before `from` (where depends on pages), each next
 * run right before the previous one, the last one at the first value, and
 * the cursor stands on the last value of the run returned. */
static void sweep(MDB_cursor *c, const char *key, int from)
{
	MDB_val k = str(key), v = nth(from), d;
	int rc, first, last, next = from, runs = 0, ok = 1, cur = 1;
	rc = mdb_cursor_get(c, &k, &v, MDB_GET_BOTH);
	printf("  sweep %s from %d: get_both rc=%d\n", key, from, rc);
	k.mv_size = 0;
	k.mv_data = NULL;
	while (runs <= MANY && (rc = mdb_cursor_get(c, &k, &d, MDB_PREV_MULTIPLE)) == 0) {
		if (run(&d, &first, &last) || (runs ? last != next - 1 : last >= next))
			ok = 0;
		cur &= on(c, last);
		next = first;
		runs++;
	}
	printf("  end rc=%d some=%d contiguous=%d down to first=%d on last of run=%d",
	       rc, runs > 0, ok, runs == 0 || next == 0, cur);
	printf(" key untouched=%d still there=%d\n", k.mv_data == NULL,
	       on(c, runs ? next + (int)(d.mv_size / VSIZE) - 1 : from));
}

/* From (key, rank `from`): MDB_PREV_MULTIPLE, then `op` continues right
 * after the run. */
static void then(MDB_cursor *c, const char *key, int from, int op, const char *name)
{
	MDB_val k = str(key), v = nth(from), d;
	int rc, first = 0, last = 0, f2, l2;
	rc = mdb_cursor_get(c, &k, &v, MDB_GET_BOTH);
	rc = rc ? rc : mdb_cursor_get(c, &k, &d, MDB_PREV_MULTIPLE);
	printf("  %s/%d prev_multiple rc=%d", key, from, rc);
	if (rc == 0 && !run(&d, &first, &last)) {
		rc = mdb_cursor_get(c, &k, &d, op);
		printf(" %s rc=%d", name, rc);
		if (rc == 0)
			printf(" continues=%d", !run(&d, &f2, &l2) && f2 == last + 1);
	}
	printf("\n");
}

static int check(MDB_env *env, MDB_txn *txn, MDB_dbi fixed, MDB_dbi dup, MDB_dbi plain)
{
	MDB_cursor *c;
	MDB_val k, v, d;
	int rc, first, last;
	(void)env;

	/* The checks, in LMDB's order. */
	CHECK(mdb_cursor_open(txn, fixed, &c));
	printf("  NULL data rc=%d\n", mdb_cursor_get(c, &k, NULL, MDB_PREV_MULTIPLE));
	mdb_cursor_close(c);
	CHECK(mdb_cursor_open(txn, dup, &c));
	printf("  not DUPFIXED rc=%d\n", mdb_cursor_get(c, &k, &d, MDB_PREV_MULTIPLE));
	mdb_cursor_close(c);
	CHECK(mdb_cursor_open(txn, plain, &c));
	printf("  not DUPSORT rc=%d\n", mdb_cursor_get(c, &k, &d, MDB_PREV_MULTIPLE));
	mdb_cursor_close(c);

	/* Unpositioned: the last key's last value, then the run before. */
	CHECK(mdb_cursor_open(txn, fixed, &c));
	k.mv_size = 0;
	rc = mdb_cursor_get(c, &k, &d, MDB_PREV_MULTIPLE);
	printf("  unset rc=%d key=%.*s", rc, (int)k.mv_size, rc == 0 ? (char *)k.mv_data : "");
	if (rc == 0) {
		int bad = run(&d, &first, &last);
		printf(" contiguous=%d before last=%d on its last=%d", !bad,
		       !bad && last < MANY - 1, !bad && on(c, last));
	}
	printf("\n");
	mdb_cursor_close(c);

	/* One value; values on one page; values on many pages. */
	CHECK(mdb_cursor_open(txn, fixed, &c));
	k = str("a-one");
	printf("  one: set rc=%d", mdb_cursor_get(c, &k, &v, MDB_SET));
	printf(" prev_multiple rc=%d\n", mdb_cursor_get(c, &k, &d, MDB_PREV_MULTIPLE));
	current(c, "one");
	k = str("b-few");
	v = nth(5);
	printf("  few: get_both rc=%d", mdb_cursor_get(c, &k, &v, MDB_GET_BOTH));
	printf(" prev_multiple rc=%d\n", mdb_cursor_get(c, &k, &d, MDB_PREV_MULTIPLE));
	current(c, "few");
	sweep(c, "c-many", MANY - 1);
	sweep(c, "c-many", MANY / 2);
	sweep(c, "c-many", 1);
	sweep(c, "c-many", 0);
	/* Moving on from the run (not from a run reached from the key's last
	 * value: LMDB's sub-cursor then keeps its end flag, and MDB_NEXT_DUP
	 * and MDB_NEXT_MULTIPLE find nothing). */
	then(c, "c-many", MANY / 2, MDB_NEXT_DUP, "next_dup");
	then(c, "c-many", MANY / 2, MDB_NEXT_MULTIPLE, "next_multiple");
	then(c, "c-many", MANY / 3, MDB_NEXT_MULTIPLE, "next_multiple");
	/* From the last duplicate reached with MDB_LAST_DUP. */
	k = str("c-many");
	rc = mdb_cursor_get(c, &k, &v, MDB_SET);
	rc = rc ? rc : mdb_cursor_get(c, &k, &v, MDB_LAST_DUP);
	printf("  last_dup rc=%d", rc);
	rc = mdb_cursor_get(c, &k, &d, MDB_PREV_MULTIPLE);
	printf(" prev_multiple rc=%d", rc);
	if (rc == 0)
		printf(" contiguous=%d on its last=%d", !run(&d, &first, &last), on(c, last));
	printf("\n");
	mdb_cursor_close(c);
	return 0;
}

int main(void)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi fixed, dup, plain;
	MDB_val k, v;
	int i;

	CHECK(mdb_env_create(&env));
	CHECK(mdb_env_set_maxdbs(env, 4));
	CHECK(mdb_env_set_mapsize(env, 64 << 20));
	CHECK(mdb_env_open(env, "./testdb", 0, 0644));
	CHECK(mdb_txn_begin(env, NULL, 0, &txn));
	CHECK(mdb_dbi_open(txn, "fixed", MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED, &fixed));
	CHECK(mdb_dbi_open(txn, "dup", MDB_CREATE | MDB_DUPSORT, &dup));
	CHECK(mdb_dbi_open(txn, "plain", MDB_CREATE, &plain));
	k = str("a-one");
	v = nth(7);
	CHECK(mdb_put(txn, fixed, &k, &v, 0));
	k = str("b-few");
	for (i = 0; i < FEW; i++) {
		v = nth(i);
		CHECK(mdb_put(txn, fixed, &k, &v, 0));
	}
	k = str("c-many");
	for (i = 0; i < MANY; i++) {
		v = nth(i);
		CHECK(mdb_put(txn, fixed, &k, &v, 0));
		CHECK(mdb_put(txn, dup, &k, &v, 0));
	}
	CHECK(mdb_put(txn, plain, &k, &v, 0));
	printf("write transaction:\n");
	if (check(env, txn, fixed, dup, plain))
		return 1;
	CHECK(mdb_txn_commit(txn));
	CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	printf("read transaction:\n");
	if (check(env, txn, fixed, dup, plain))
		return 1;
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return 0;
}
