/*
 * The escape battery's probe (tests/sandbox_battery.rs): `probe CASE ARGS...` tries exactly one
 * kind of thing and prints, one line per attempt:
 *
 *   ALLOWED <what>: <detail>     the attempt worked (inside a sandbox, an escape unless the test
 *                                says otherwise: a write to the private /tmp works by design)
 *   DENIED <what>: <ERRNO>       the attempt failed, with the errno's name
 *   INFO <text>                  facts for the test to check (ids, status lines, fds, pids)
 *
 * stdout is line-buffered so that a process killed by a limit has said what it did so far.
 * The test compiles this with `cc` at test time; it needs nothing but libc and kernel headers.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif

static int allowed_count;

static const char *ename(int e) {
    const char *name = strerrorname_np(e);
    return name ? name : "E?";
}

static void denied(const char *what) { printf("DENIED %s: %s\n", what, ename(errno)); }

static void allowed(const char *what, const char *detail) {
    allowed_count++;
    printf("ALLOWED %s: %s\n", what, detail);
}

/* `what(arg)` into a static buffer, for messages. */
static const char *call(const char *what, const char *arg) {
    static char buf[600];
    snprintf(buf, sizeof buf, "%s(%s)", what, arg);
    return buf;
}

/* Prints up to 2000 bytes of data, newlines escaped, so a leaked secret shows in the output. */
static void allowed_data(const char *what, const char *data, ssize_t n) {
    char shown[4100];
    size_t j = 0;
    for (ssize_t i = 0; i < n && i < 2000 && j + 3 < sizeof shown; i++) {
        char c = data[i];
        if (c == '\n') {
            shown[j++] = '\\';
            shown[j++] = 'n';
        } else if (c >= 32 && c < 127) {
            shown[j++] = c;
        } else {
            shown[j++] = '.';
        }
    }
    shown[j] = 0;
    char detail[4200];
    snprintf(detail, sizeof detail, "%zd bytes: %s", n, shown);
    allowed(what, detail);
}

static int case_read(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            denied(call("open", argv[i]));
            continue;
        }
        char buf[4096];
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0)
            denied(call("read", argv[i]));
        else
            allowed_data(call("read", argv[i]), buf, n);
        close(fd);
    }
    return 0;
}

static int case_list(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        DIR *d = opendir(argv[i]);
        if (!d) {
            denied(call("opendir", argv[i]));
            continue;
        }
        char names[300] = "";
        int count = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            count++;
            if (strlen(names) + strlen(e->d_name) + 2 < sizeof names) {
                strcat(names, e->d_name);
                strcat(names, " ");
            }
        }
        closedir(d);
        char detail[400];
        snprintf(detail, sizeof detail, "%d entries: %s", count, names);
        allowed(call("opendir", argv[i]), detail);
    }
    return 0;
}

static int case_write(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        int fd = open(argv[i], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) {
            denied(call("open-for-write", argv[i]));
            continue;
        }
        if (write(fd, "pwned\n", 6) != 6)
            denied(call("write", argv[i]));
        else
            allowed(call("write", argv[i]), "6 bytes written");
        close(fd);
    }
    return 0;
}

/* Writes back the value a file holds (a sysctl): harmless if it works, and it must not. */
static int case_rewrite(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        char value[256];
        int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, value, sizeof value - 1);
        if (fd >= 0)
            close(fd);
        if (n <= 0) {
            snprintf(value, sizeof value, "h");
            n = 1;
        }
        fd = open(argv[i], O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
            denied(call("open-for-write", argv[i]));
            continue;
        }
        if (write(fd, value, (size_t)n) < 0)
            denied(call("write", argv[i]));
        else
            allowed(call("write", argv[i]), "value written back");
        close(fd);
    }
    return 0;
}

static int case_rename(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        char what[600];
        snprintf(what, sizeof what, "rename(%s, %s)", argv[0], argv[i]);
        if (rename(argv[0], argv[i]) < 0)
            denied(what);
        else
            allowed(what, "renamed");
    }
    return 0;
}

static int case_link(int argc, char **argv) {
    for (int i = 0; i + 1 < argc; i += 2) {
        char what[600];
        snprintf(what, sizeof what, "link(%s, %s)", argv[i], argv[i + 1]);
        if (link(argv[i], argv[i + 1]) < 0)
            denied(what);
        else
            allowed(what, "linked");
    }
    return 0;
}

static int case_metadata(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        struct stat st;
        mode_t mode = stat(argv[i], &st) == 0 ? (st.st_mode & 07777) : 0644;
        if (chmod(argv[i], mode ^ 0002) < 0)
            denied(call("chmod", argv[i]));
        else
            allowed(call("chmod", argv[i]), "mode changed");
        if (chown(argv[i], getuid(), getgid()) < 0)
            denied(call("chown", argv[i]));
        else
            allowed(call("chown", argv[i]), "owner set");
        struct timespec times[2] = {{0, 0}, {0, 0}};
        if (utimensat(AT_FDCWD, argv[i], times, 0) < 0)
            denied(call("utimensat", argv[i]));
        else
            allowed(call("utimensat", argv[i]), "times set to 1970");
    }
    return 0;
}

static int case_mknod(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        if (mknod(argv[i], S_IFBLK | 0600, makedev(8, 0)) < 0)
            denied(call("mknod-block", argv[i]));
        else
            allowed(call("mknod-block", argv[i]), "block device 8:0 created");
        if (mknod(argv[i], S_IFCHR | 0600, makedev(1, 1)) < 0)
            denied(call("mknod-mem", argv[i]));
        else
            allowed(call("mknod-mem", argv[i]), "char device 1:1 (/dev/mem) created");
    }
    return 0;
}

static int case_reopen(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%s", argv[i]);
        int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd < 0) {
            denied(call("open-for-write", path));
            continue;
        }
        if (write(fd, "pwned\n", 6) != 6)
            denied(call("write", path));
        else
            allowed(call("write", path), "wrote through the reopened descriptor");
        close(fd);
    }
    return 0;
}

static int case_exe(int argc, char **argv) {
    const char *defaults[] = {"/proc/self/exe", "/proc/1/exe"};
    char **paths = argc ? argv : (char **)defaults;
    int n = argc ? argc : 2;
    for (int i = 0; i < n; i++) {
        int fd = open(paths[i], O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
            denied(call("open-for-write", paths[i]));
            continue;
        }
        allowed(call("open-for-write", paths[i]), "the running binary is writable (not written)");
        close(fd);
    }
    return 0;
}

static int case_mount(void) {
    if (mount("tmpfs", "/tmp", "tmpfs", 0, NULL) < 0)
        denied("mount(tmpfs on /tmp)");
    else
        allowed("mount(tmpfs on /tmp)", "mounted");
    if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL) < 0)
        denied("mount(remount / read-write)");
    else
        allowed("mount(remount / read-write)", "remounted");
    if (umount2("/proc", MNT_DETACH) < 0)
        denied("umount2(/proc)");
    else
        allowed("umount2(/proc)", "unmounted");
    long fd = syscall(SYS_fsopen, "tmpfs", 0);
    if (fd < 0)
        denied("fsopen(tmpfs)");
    else
        allowed("fsopen(tmpfs)", "new mount API open");
    return 0;
}

static int case_pivot_root(void) {
    if (syscall(SYS_pivot_root, "/tmp", "/tmp") < 0)
        denied("pivot_root(/tmp, /tmp)");
    else
        allowed("pivot_root(/tmp, /tmp)", "pivoted");
    return 0;
}

static int case_chroot(void) {
    if (chroot("/tmp") < 0)
        denied("chroot(/tmp)");
    else
        allowed("chroot(/tmp)", "chrooted");
    return 0;
}

static int case_userns(void) {
    if (unshare(CLONE_NEWUSER) < 0)
        denied("unshare(CLONE_NEWUSER)");
    else
        allowed("unshare(CLONE_NEWUSER)", "new user namespace");
    if (unshare(CLONE_NEWNS) < 0)
        denied("unshare(CLONE_NEWNS)");
    else
        allowed("unshare(CLONE_NEWNS)", "new mount namespace");
    long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
    if (pid == 0)
        _exit(0);
    if (pid < 0) {
        denied("clone(CLONE_NEWUSER)");
    } else {
        waitpid((pid_t)pid, NULL, 0);
        allowed("clone(CLONE_NEWUSER)", "child in a new user namespace");
    }
    /* struct clone_args: flags first, exit_signal at offset 32; 88 bytes in all (v2). */
    uint64_t args[11] = {0};
    args[0] = CLONE_NEWUSER;
    args[4] = SIGCHLD;
    pid = syscall(SYS_clone3, args, sizeof args);
    if (pid == 0)
        _exit(0);
    if (pid < 0) {
        denied("clone3(CLONE_NEWUSER)");
    } else {
        waitpid((pid_t)pid, NULL, 0);
        allowed("clone3(CLONE_NEWUSER)", "child in a new user namespace");
    }
    int fd = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && setns(fd, CLONE_NEWUSER) < 0)
        denied("setns(own user namespace)");
    else if (fd >= 0)
        allowed("setns(own user namespace)", "entered");
    return 0;
}

static int case_sethostname(int argc, char **argv) {
    const char *name = argc ? argv[0] : "pwned";
    if (sethostname(name, strlen(name)) < 0)
        denied(call("sethostname", name));
    else
        allowed(call("sethostname", name), "hostname set (in the sandbox's uts namespace)");
    return 0;
}

static int connect_inet(const char *what, int family, int type, const char *ip, int port) {
    int fd = socket(family, type | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        denied(call(what, "socket"));
        return 0;
    }
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t len;
    if (family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)port);
        inet_pton(AF_INET, ip, &a->sin_addr);
        len = sizeof *a;
    } else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        inet_pton(AF_INET6, ip, &a->sin6_addr);
        len = sizeof *a;
    }
    if (type == SOCK_DGRAM) {
        if (sendto(fd, "pwned", 5, 0, (struct sockaddr *)&ss, len) < 0)
            denied(call(what, "sendto"));
        else
            allowed(call(what, "sendto"), "datagram sent");
    } else if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
        denied(call(what, "connect"));
    } else {
        allowed(call(what, "connect"), "connected");
    }
    close(fd);
    return 0;
}

static int case_sockets(void) {
    struct {
        const char *what;
        int domain, type, protocol;
    } kinds[] = {
        {"socket(AF_INET, SOCK_RAW)", AF_INET, SOCK_RAW, IPPROTO_ICMP},
        {"socket(AF_INET6, SOCK_RAW)", AF_INET6, SOCK_RAW, IPPROTO_ICMPV6},
        {"socket(AF_PACKET, SOCK_RAW)", AF_PACKET, SOCK_RAW, 0x0300 /* htons(ETH_P_ALL) */},
        {"socket(AF_NETLINK, NETLINK_ROUTE)", AF_NETLINK, SOCK_RAW, 0},
        {"socket(AF_NETLINK, NETLINK_AUDIT)", AF_NETLINK, SOCK_RAW, 9},
        {"socket(AF_VSOCK, SOCK_STREAM)", AF_VSOCK, SOCK_STREAM, 0},
        {"socket(AF_ALG, SOCK_SEQPACKET)", 38, SOCK_SEQPACKET, 0},
        {"socket(AF_INET, SOCK_STREAM)", AF_INET, SOCK_STREAM, 0},
        {"socket(AF_INET6, SOCK_DGRAM)", AF_INET6, SOCK_DGRAM, 0},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        int fd = socket(kinds[i].domain, kinds[i].type | SOCK_CLOEXEC, kinds[i].protocol);
        if (fd < 0) {
            denied(kinds[i].what);
        } else {
            allowed(kinds[i].what, "socket created");
            close(fd);
        }
    }
    int pair[2];
    if (socketpair(AF_INET, SOCK_STREAM, 0, pair) < 0)
        denied("socketpair(AF_INET)");
    else
        allowed("socketpair(AF_INET)", "created");
    return 0;
}

static int case_io_uring(void) {
    unsigned char params[120];
    memset(params, 0, sizeof params);
    long fd = syscall(SYS_io_uring_setup, 8, params);
    if (fd < 0) {
        denied("io_uring_setup(8)");
    } else {
        allowed("io_uring_setup(8)", "a ring, whose IORING_OP_SOCKET/CONNECT bypass socket()");
        close((int)fd);
    }
    return 0;
}

static int connect_unix(const char *what, const char *name, int abstract) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        denied(call(what, "socket"));
        return 0;
    }
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    size_t n = strlen(name);
    if (n > sizeof a.sun_path - 2)
        n = sizeof a.sun_path - 2;
    socklen_t len;
    if (abstract) {
        memcpy(a.sun_path + 1, name, n);
        len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
    } else {
        memcpy(a.sun_path, name, n);
        len = (socklen_t)sizeof a;
    }
    if (connect(fd, (struct sockaddr *)&a, len) < 0)
        denied(call(what, name));
    else
        allowed(call(what, name), "connected");
    close(fd);
    return 0;
}

static int case_ssh_agent(int argc, char **argv) {
    const char *env = getenv("SSH_AUTH_SOCK");
    if (env) {
        allowed("getenv(SSH_AUTH_SOCK)", env);
        connect_unix("connect-unix", env, 0);
    } else {
        errno = ENOENT;
        denied("getenv(SSH_AUTH_SOCK)");
    }
    for (int i = 0; i < argc; i++)
        connect_unix("connect-unix", argv[i], 0);
    return 0;
}

static int case_ptrace(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        pid_t pid = atoi(argv[i]);
        if (ptrace(PTRACE_ATTACH, pid, 0, 0) < 0) {
            denied(call("ptrace(PTRACE_ATTACH)", argv[i]));
        } else {
            allowed(call("ptrace(PTRACE_ATTACH)", argv[i]), "attached");
            ptrace(PTRACE_DETACH, pid, 0, 0);
        }
        if (ptrace(PTRACE_SEIZE, pid, 0, 0) < 0) {
            denied(call("ptrace(PTRACE_SEIZE)", argv[i]));
        } else {
            allowed(call("ptrace(PTRACE_SEIZE)", argv[i]), "seized");
            ptrace(PTRACE_DETACH, pid, 0, 0);
        }
        char buf[64];
        struct iovec local = {buf, sizeof buf};
        struct iovec remote = {(void *)0x400000, sizeof buf};
        if (process_vm_readv(pid, &local, 1, &remote, 1, 0) < 0)
            denied(call("process_vm_readv", argv[i]));
        else
            allowed(call("process_vm_readv", argv[i]), "read its memory");
        struct iovec out = {(void *)0x400000, 1};
        if (process_vm_writev(pid, &local, 1, &out, 1, 0) < 0)
            denied(call("process_vm_writev", argv[i]));
        else
            allowed(call("process_vm_writev", argv[i]), "wrote its memory");
    }
    return 0;
}

static int case_kill(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        pid_t pid = atoi(argv[i]);
        if (kill(pid, SIGKILL) < 0)
            denied(call("kill(SIGKILL)", argv[i]));
        else
            allowed(call("kill(SIGKILL)", argv[i]), "signal sent");
    }
    /* Every process this one may signal: a host process must not be among them. */
    if (kill(-1, SIGKILL) < 0)
        denied("kill(-1, SIGKILL)");
    else
        printf("INFO kill(-1, SIGKILL) signalled the sandbox's own processes\n");
    return 0;
}

static void *idle(void *arg) {
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static int case_threads(int argc, char **argv) {
    long max = argc ? atol(argv[0]) : 100000;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (long n = 0; n < max; n++) {
        pthread_t t;
        int rc = pthread_create(&t, &attr, idle, NULL);
        if (rc) {
            char what[80];
            snprintf(what, sizeof what, "pthread_create after %ld threads", n);
            errno = rc;
            denied(what);
            fprintf(stderr, "pthread_create: %s\n", strerror(rc));
            return 1;
        }
    }
    allowed("pthread_create", "every thread asked for was created");
    return 0;
}

static int case_alloc(int argc, char **argv) {
    size_t gib = argc ? (size_t)atol(argv[0]) : 8;
    size_t size = gib << 30;
    char *p = malloc(size);
    if (!p) {
        char what[64];
        snprintf(what, sizeof what, "malloc(%zu GiB)", gib);
        denied(what);
        fprintf(stderr, "malloc: Cannot allocate memory\n");
        return 1;
    }
    printf("INFO malloc(%zu GiB) returned; touching every page\n", gib);
    for (size_t off = 0; off < size; off += 64 << 20) {
        size_t chunk = size - off < (64u << 20) ? size - off : (64u << 20);
        memset(p + off, 1, chunk);
        if ((off >> 20) % 1024 == 0)
            printf("INFO touched %zu MiB\n", off >> 20);
    }
    allowed("malloc+memset", "every page of the allocation was touched");
    return 0;
}

static int case_spin(void) {
    volatile unsigned long n = 0;
    for (;;)
        n++;
    return 0;
}

static int case_fill_file(int argc, char **argv) {
    signal(SIGXFSZ, SIG_IGN);
    const char *path = argc ? argv[0] : "/work/fill";
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        denied(call("open", path));
        return 1;
    }
    static char chunk[1 << 20];
    memset(chunk, 'f', sizeof chunk);
    long mib = 0;
    for (; mib < 65536; mib++) {
        if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk) {
            char what[128];
            snprintf(what, sizeof what, "write(%s) after %ld MiB", path, mib);
            denied(what);
            fprintf(stderr, "write: %s\n", strerror(errno));
            return 1;
        }
    }
    allowed("write", "64 GiB written");
    return 0;
}

static int case_fill_dir(int argc, char **argv) {
    signal(SIGXFSZ, SIG_IGN);
    const char *dir = argc ? argv[0] : "/tmp";
    const char *prefix = argc > 1 ? argv[1] : "fill";
    static char chunk[1 << 20];
    memset(chunk, 'f', sizeof chunk);
    long mib = 0;
    for (int file = 0; file < 16384; file++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s-%d", dir, prefix, file);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            char what[600];
            snprintf(what, sizeof what, "open(%s) after %ld MiB", path, mib);
            denied(what);
            return 1;
        }
        for (int i = 0; i < 4; i++, mib++) {
            if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk) {
                char what[600];
                snprintf(what, sizeof what, "write(%s) after %ld MiB", path, mib);
                denied(what);
                fprintf(stderr, "write: %s\n", strerror(errno));
                return 1;
            }
        }
        close(fd);
    }
    allowed("write", "64 GiB written");
    return 0;
}

static int case_fds(void) {
    long n = 0;
    for (; n < 1000000; n++) {
        if (open("/dev/null", O_RDONLY) < 0) {
            char what[64];
            snprintf(what, sizeof what, "open(/dev/null) after %ld descriptors", n);
            denied(what);
            return 1;
        }
    }
    allowed("open", "a million descriptors");
    return 0;
}

static int case_flood(void) {
    static char chunk[1 << 16];
    memset(chunk, 'x', sizeof chunk);
    for (;;)
        if (write(1, chunk, sizeof chunk) < 0)
            return 1;
}

/* The status lines from the system calls themselves, where /proc/self/status cannot be read
 * (the sandbox's fallback has no /proc): the same names and formats. */
static void status_from_syscalls(void) {
    printf("INFO NoNewPrivs:\t%d\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
    /* In filter mode the call returns 2 (it is not one the filters deny). */
    printf("INFO Seccomp:\t%d\n", prctl(PR_GET_SECCOMP, 0, 0, 0, 0));
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &header, data) < 0) {
        denied("capget");
        return;
    }
    unsigned long long inh = data[0].inheritable | (unsigned long long)data[1].inheritable << 32;
    unsigned long long prm = data[0].permitted | (unsigned long long)data[1].permitted << 32;
    unsigned long long eff = data[0].effective | (unsigned long long)data[1].effective << 32;
    unsigned long long bnd = 0, amb = 0;
    for (int cap = 0; cap < 64; cap++) {
        int in_bounding = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
        if (in_bounding < 0)
            break; /* past the kernel's last capability */
        if (in_bounding)
            bnd |= 1ULL << cap;
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) == 1)
            amb |= 1ULL << cap;
    }
    printf("INFO CapInh:\t%016llx\nINFO CapPrm:\t%016llx\nINFO CapEff:\t%016llx\n", inh, prm, eff);
    printf("INFO CapBnd:\t%016llx\nINFO CapAmb:\t%016llx\n", bnd, amb);
}

static void status_lines(void) {
    FILE *f = fopen("/proc/self/status", "re");
    if (!f) {
        denied("fopen(/proc/self/status)");
        status_from_syscalls();
        return;
    }
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "NoNewPrivs:", 11) || !strncmp(line, "Seccomp:", 8) ||
            !strncmp(line, "Cap", 3) || !strncmp(line, "Uid:", 4) || !strncmp(line, "Gid:", 4))
            printf("INFO %s", line);
    }
    fclose(f);
}

static int case_ids(void) {
    uid_t r, e, s;
    getresuid(&r, &e, &s);
    printf("INFO ruid=%u euid=%u suid=%u\n", r, e, s);
    status_lines();
    if (e != r)
        allowed("execve(setuid binary)", "the effective uid changed");
    else {
        errno = EPERM;
        denied("execve(setuid binary): effective uid unchanged");
    }
    struct statvfs v;
    if (statvfs("/usr/bin", &v) == 0)
        printf("INFO /usr/bin nosuid=%d\n", (v.f_flag & ST_NOSUID) ? 1 : 0);
    return 0;
}

static int case_bpf(void) {
    /* union bpf_attr for BPF_MAP_CREATE: map_type, key_size, value_size, max_entries. */
    uint32_t attr[32] = {2 /* BPF_MAP_TYPE_ARRAY */, 4, 4, 1};
    long fd = syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, attr, sizeof attr);
    if (fd < 0)
        denied("bpf(BPF_MAP_CREATE)");
    else
        allowed("bpf(BPF_MAP_CREATE)", "map created");
    return 0;
}

static int case_perf(void) {
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.size = sizeof attr;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
    if (fd < 0)
        denied("perf_event_open(task clock, self)");
    else
        allowed("perf_event_open(task clock, self)", "event opened");
    return 0;
}

static int case_userfaultfd(void) {
    long fd = syscall(SYS_userfaultfd, O_CLOEXEC | 1 /* UFFD_USER_MODE_ONLY */);
    if (fd < 0)
        denied("userfaultfd(UFFD_USER_MODE_ONLY)");
    else
        allowed("userfaultfd(UFFD_USER_MODE_ONLY)", "created");
    return 0;
}

static int case_keyctl(void) {
    long id = syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 1);
    if (id < 0)
        denied("keyctl(KEYCTL_GET_KEYRING_ID, session)");
    else
        allowed("keyctl(KEYCTL_GET_KEYRING_ID, session)", "the session keyring");
    id = syscall(SYS_add_key, "user", "battery", "pwned", 5, -2 /* process keyring */);
    if (id < 0)
        denied("add_key(user)");
    else
        allowed("add_key(user)", "key added");
    return 0;
}

static int case_tiocsti(void) {
    int ptmx = open("/dev/ptmx", O_RDWR | O_CLOEXEC);
    if (ptmx < 0)
        denied("open(/dev/ptmx)");
    else {
        allowed("open(/dev/ptmx)", "a new pty");
        close(ptmx);
    }
    if (!isatty(0)) {
        errno = ENOTTY;
        denied("isatty(0)");
        return 0;
    }
    /* Make the terminal our controlling one first: TIOCSTI on another tty needs a capability. */
    if (ioctl(0, TIOCSCTTY, 0) < 0)
        denied("ioctl(0, TIOCSCTTY)");
    else
        printf("INFO ioctl(0, TIOCSCTTY) made stdin the controlling terminal\n");
    const char *text = "echo PWNED-BY-TIOCSTI\n";
    int injected = 0;
    for (const char *c = text; *c; c++) {
        if (ioctl(0, TIOCSTI, c) < 0) {
            denied("ioctl(0, TIOCSTI)");
            break;
        }
        injected++;
    }
    if (injected)
        allowed("ioctl(0, TIOCSTI)", "characters pushed into the terminal's input");
    unsigned long high = (unsigned long)TIOCSTI | (1UL << 32);
    if (syscall(SYS_ioctl, 0, high, "x") < 0)
        denied("ioctl(0, TIOCSTI | 1 << 32)");
    else
        allowed("ioctl(0, TIOCSTI | 1 << 32)", "a character pushed");
    char sub = 12; /* TIOCL_GETKMSGREDIRECT: harmless, and still TIOCLINUX */
    if (ioctl(0, TIOCLINUX, &sub) < 0)
        denied("ioctl(0, TIOCLINUX)");
    else
        allowed("ioctl(0, TIOCLINUX)", "answered");
    return 0;
}

extern char **environ;

static int case_env(void) {
    for (char **e = environ; *e; e++)
        printf("INFO env %s\n", *e);
    return 0;
}

static int case_fdlist(void) {
    DIR *d = opendir("/proc/self/fd");
    if (!d) {
        /* No /proc (the sandbox's fallback): every descriptor fcntl knows, up to the limit. */
        denied("opendir(/proc/self/fd)");
        long max = sysconf(_SC_OPEN_MAX);
        if (max < 0 || max > 65536)
            max = 65536;
        for (int fd = 0; fd < max; fd++) {
            struct stat st;
            if (fcntl(fd, F_GETFD) < 0 || fstat(fd, &st) < 0)
                continue;
            printf("INFO fd %d -> (mode %o, inode %lu)\n", fd, (unsigned)st.st_mode,
                   (unsigned long)st.st_ino);
        }
        return 0;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (atoi(e->d_name) == dirfd(d))
            continue;
        char path[300], target[300];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, target, sizeof target - 1);
        target[n < 0 ? 0 : n] = 0;
        printf("INFO fd %s -> %s\n", e->d_name, target);
    }
    closedir(d);
    return 0;
}

static int case_ps(void) {
    DIR *d = opendir("/proc");
    if (!d) {
        denied("opendir(/proc)");
        return 0;
    }
    printf("INFO pids");
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
            printf(" %s", e->d_name);
    printf("\n");
    closedir(d);
    return 0;
}

static int case_dns(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        struct addrinfo *res = NULL;
        int rc = getaddrinfo(argv[i], "443", NULL, &res);
        if (rc) {
            printf("DENIED getaddrinfo(%s): %s\n", argv[i], gai_strerror(rc));
        } else {
            char addr[INET6_ADDRSTRLEN] = "?";
            if (res->ai_family == AF_INET)
                inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr, addr,
                          sizeof addr);
            allowed(call("getaddrinfo", argv[i]), addr);
            freeaddrinfo(res);
        }
    }
    return 0;
}

static int case_survivors(int argc, char **argv) {
    /* A setsid'd child and a double-forked grandchild, each exec'ing `sleep MARKER`. */
    const char *marker = argc ? argv[0] : "1000";
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        execlp("sleep", "sleep", marker, (char *)NULL);
        _exit(127);
    }
    pid = fork();
    if (pid == 0) {
        if (fork() == 0) {
            setsid();
            signal(SIGHUP, SIG_IGN);
            execlp("sleep", "sleep", marker, (char *)NULL);
            _exit(127);
        }
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    printf("INFO started a setsid child and a double-forked grandchild\n");
    return 0;
}

static int case_hello(void) {
    printf("INFO hello from pid %d\n", getpid());
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: probe CASE [ARGS...]\n");
        return 2;
    }
    const char *c = argv[1];
    int n = argc - 2;
    char **a = argv + 2;
    int rc;
    if (!strcmp(c, "read")) rc = case_read(n, a);
    else if (!strcmp(c, "list")) rc = case_list(n, a);
    else if (!strcmp(c, "write")) rc = case_write(n, a);
    else if (!strcmp(c, "rewrite")) rc = case_rewrite(n, a);
    else if (!strcmp(c, "rename")) rc = case_rename(n, a);
    else if (!strcmp(c, "link")) rc = case_link(n, a);
    else if (!strcmp(c, "metadata")) rc = case_metadata(n, a);
    else if (!strcmp(c, "mknod")) rc = case_mknod(n, a);
    else if (!strcmp(c, "reopen")) rc = case_reopen(n, a);
    else if (!strcmp(c, "exe")) rc = case_exe(n, a);
    else if (!strcmp(c, "mount")) rc = case_mount();
    else if (!strcmp(c, "pivot_root")) rc = case_pivot_root();
    else if (!strcmp(c, "chroot")) rc = case_chroot();
    else if (!strcmp(c, "userns")) rc = case_userns();
    else if (!strcmp(c, "sethostname")) rc = case_sethostname(n, a);
    else if (!strcmp(c, "tcp") && n == 2) rc = connect_inet("tcp", AF_INET, SOCK_STREAM, a[0], atoi(a[1]));
    else if (!strcmp(c, "tcp6") && n == 2) rc = connect_inet("tcp6", AF_INET6, SOCK_STREAM, a[0], atoi(a[1]));
    else if (!strcmp(c, "udp") && n == 2) rc = connect_inet("udp", AF_INET, SOCK_DGRAM, a[0], atoi(a[1]));
    else if (!strcmp(c, "sockets")) rc = case_sockets();
    else if (!strcmp(c, "io_uring")) rc = case_io_uring();
    else if (!strcmp(c, "unix") && n == 1) rc = connect_unix("connect-unix", a[0], 0);
    else if (!strcmp(c, "abstract") && n == 1) rc = connect_unix("connect-abstract", a[0], 1);
    else if (!strcmp(c, "ssh-agent")) rc = case_ssh_agent(n, a);
    else if (!strcmp(c, "ptrace")) rc = case_ptrace(n, a);
    else if (!strcmp(c, "kill")) rc = case_kill(n, a);
    else if (!strcmp(c, "threads")) rc = case_threads(n, a);
    else if (!strcmp(c, "alloc")) rc = case_alloc(n, a);
    else if (!strcmp(c, "spin")) rc = case_spin();
    else if (!strcmp(c, "fill-file")) rc = case_fill_file(n, a);
    else if (!strcmp(c, "fill-dir")) rc = case_fill_dir(n, a);
    else if (!strcmp(c, "fds")) rc = case_fds();
    else if (!strcmp(c, "flood")) rc = case_flood();
    else if (!strcmp(c, "ids")) rc = case_ids();
    else if (!strcmp(c, "bpf")) rc = case_bpf();
    else if (!strcmp(c, "perf")) rc = case_perf();
    else if (!strcmp(c, "userfaultfd")) rc = case_userfaultfd();
    else if (!strcmp(c, "keyctl")) rc = case_keyctl();
    else if (!strcmp(c, "tiocsti")) rc = case_tiocsti();
    else if (!strcmp(c, "env")) rc = case_env();
    else if (!strcmp(c, "fdlist")) rc = case_fdlist();
    else if (!strcmp(c, "ps")) rc = case_ps();
    else if (!strcmp(c, "status")) { status_lines(); rc = 0; }
    else if (!strcmp(c, "dns")) rc = case_dns(n, a);
    else if (!strcmp(c, "survivors")) rc = case_survivors(n, a);
    else if (!strcmp(c, "hello")) rc = case_hello();
    else {
        fprintf(stderr, "probe: unknown case %s\n", c);
        return 2;
    }
    if (rc == 0 && allowed_count)
        rc = 3;
    return rc;
}
