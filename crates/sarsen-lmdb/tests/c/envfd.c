/* The environment's file descriptor and copies to a descriptor:
 * mdb_env_get_fd before open, on a writable and a read-only environment
 * (the data file itself, its access mode, the same descriptor each call,
 * closed by mdb_env_close), and mdb_env_copyfd/mdb_env_copyfd2 written at
 * the descriptor's offset, to a pipe, to a read-only descriptor, and
 * compacting; each copy opened with MDB_NOSUBDIR and read back. The plain
 * copies run with a TMPDIR that cannot be made (LMDB needs none).
 * It prints every outcome; tests/c_programs.rs builds it against real
 * LMDB and against Sarsen's liblmdb.so and compares the two outputs. Run
 * in a directory holding an empty ./testdb. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "lmdb.h"

#define CHECK(expr)                                                          \
	do {                                                                     \
		int rc_ = (expr);                                                    \
		if (rc_) {                                                           \
			fprintf(stderr, "%s: %s\n", #expr, mdb_strerror(rc_));          \
			exit(1);                                                         \
		}                                                                    \
	} while (0)

#define N 3000

/* Entries of the main database at `path` (an environment of one file when
 * `flags` has MDB_NOSUBDIR) and a hash of their bytes. */
static void readback(const char *what, const char *path, unsigned flags)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *c;
	MDB_val k, v;
	unsigned long n = 0, h = 5381;
	size_t i;
	int rc;
	CHECK(mdb_env_create(&env));
	rc = mdb_env_open(env, path, flags | MDB_RDONLY, 0644);
	if (rc) {
		printf("%s: open rc=%d\n", what, rc);
		mdb_env_close(env);
		return;
	}
	CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
	CHECK(mdb_cursor_open(txn, dbi, &c));
	while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
		n++;
		for (i = 0; i < k.mv_size; i++)
			h = h * 33 + ((unsigned char *)k.mv_data)[i];
		for (i = 0; i < v.mv_size; i++)
			h = h * 33 + ((unsigned char *)v.mv_data)[i];
	}
	printf("%s: rc=%d entries=%lu hash=%lx\n", what, rc, n, h);
	mdb_cursor_close(c);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

/* The access mode of `fd`, as text. */
static const char *mode(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return "closed";
	switch (fl & O_ACCMODE) {
	case O_RDONLY: return "rdonly";
	case O_WRONLY: return "wronly";
	default: return "rdwr";
	}
}

/* Whether `fd` is the data file of the environment in ./testdb (LMDB's or
 * Sarsen's name). */
static int is_data_file(int fd)
{
	struct stat a, b;
	if (fstat(fd, &a))
		return 0;
	if (stat("testdb/data.mdb", &b) && stat("testdb/data.sdb", &b))
		return 0;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int main(void)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k, v;
	char kb[16], vb[64];
	int fd = 12345, fd2 = 0, out, rc, i, p[2];
	off_t at;
	struct stat st;
	pid_t child;

	CHECK(mdb_env_create(&env));
	rc = mdb_env_get_fd(env, &fd);
	printf("get_fd before open: rc=%d fd=%d\n", rc, fd);
	CHECK(mdb_env_set_mapsize(env, 64 << 20));
	CHECK(mdb_env_open(env, "./testdb", 0, 0644));
	CHECK(mdb_txn_begin(env, NULL, 0, &txn));
	CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
	for (i = 0; i < N; i++) {
		snprintf(kb, sizeof kb, "key%06d", i * 7919 % N);
		memset(vb, 'a' + i % 26, sizeof vb);
		k.mv_size = strlen(kb);
		k.mv_data = kb;
		v.mv_size = 10 + i % 50;
		v.mv_data = vb;
		CHECK(mdb_put(txn, dbi, &k, &v, 0));
	}
	CHECK(mdb_txn_commit(txn));
	/* Free pages inside the file: the copies hold zeros there. */
	CHECK(mdb_txn_begin(env, NULL, 0, &txn));
	for (i = 0; i < N; i += 3) {
		snprintf(kb, sizeof kb, "key%06d", i);
		k.mv_size = strlen(kb);
		k.mv_data = kb;
		CHECK(mdb_del(txn, dbi, &k, NULL));
	}
	CHECK(mdb_txn_commit(txn));

	rc = mdb_env_get_fd(env, &fd);
	CHECK(mdb_env_get_fd(env, &fd2));
	printf("get_fd: rc=%d same=%d data file=%d mode=%s fdatasync=%d\n", rc,
	       fd == fd2, is_data_file(fd), mode(fd), fdatasync(fd));
	printf("get_fd NULL: rc=%d\n", mdb_env_get_fd(env, NULL));

	/* No temporary directory to be had (a path under a plain file): a
	 * copy goes straight to fd. */
	out = open("notadir", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	close(out);
	setenv("TMPDIR", "./notadir/tmp", 1);

	/* At the descriptor's offset, after a header. */
	out = open("copy.out", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0 || write(out, "HEAD\n", 5) != 5)
		return 1;
	rc = mdb_env_copyfd(env, out);
	at = lseek(out, 0, SEEK_CUR);
	fstat(out, &st);
	printf("copyfd after a header: rc=%d offset is the end=%d past the header=%d\n",
	       rc, at == st.st_size, at > 5 + 4096);
	close(out);

	/* Into an empty file, read back. */
	out = open("copy.mdb", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	rc = mdb_env_copyfd(env, out);
	printf("copyfd: rc=%d\n", rc);
	close(out);
	readback("copyfd", "copy.mdb", MDB_NOSUBDIR);

	/* Through a pipe, to a child that saves what it reads. */
	if (pipe(p))
		return 1;
	fflush(stdout);
	child = fork();
	if (child == 0) {
		char buf[8192];
		ssize_t got;
		int f = open("piped.mdb", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		close(p[1]);
		while ((got = read(p[0], buf, sizeof buf)) > 0)
			if (write(f, buf, got) != got)
				_exit(1);
		close(f);
		_exit(got < 0);
	}
	close(p[0]);
	rc = mdb_env_copyfd(env, p[1]);
	close(p[1]);
	waitpid(child, &i, 0);
	printf("copyfd to a pipe: rc=%d child=%d\n", rc, i);
	readback("piped", "piped.mdb", MDB_NOSUBDIR);

	/* A descriptor open for reading only. */
	out = open("copy.mdb", O_RDONLY);
	rc = mdb_env_copyfd(env, out);
	printf("copyfd to a read-only fd: rc=%d (EBADF=%d)\n", rc, rc == EBADF);
	close(out);

	/* Compacting (Sarsen builds it in $TMPDIR). */
	unsetenv("TMPDIR");
	out = open("compact.mdb", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	rc = mdb_env_copyfd2(env, out, MDB_CP_COMPACT);
	printf("copyfd2 compact: rc=%d\n", rc);
	close(out);
	readback("compact", "compact.mdb", MDB_NOSUBDIR);
	readback("source", "./testdb", 0);

	mdb_env_close(env);
	printf("after close: fd %s\n", mode(fd));

	/* A read-only environment's descriptor is read-only. */
	CHECK(mdb_env_create(&env));
	CHECK(mdb_env_open(env, "./testdb", MDB_RDONLY, 0644));
	rc = mdb_env_get_fd(env, &fd);
	printf("read-only get_fd: rc=%d data file=%d mode=%s\n", rc,
	       is_data_file(fd), mode(fd));
	mdb_env_close(env);
	return 0;
}
