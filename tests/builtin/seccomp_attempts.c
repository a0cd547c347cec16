/* Each way a sandboxed command could make or reach a socket, or use a refused call:
   prints "name rc errno" per attempt; the io_uring chain and the raw socket attempts send
   "escaped-NAME" to the Unix socket named by argv[1] when they get through. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static struct sockaddr_un target;

static void report(const char *name, long rc) {
    printf("%s %ld %d\n", name, rc, rc < 0 ? errno : 0);
    fflush(stdout);
}

static void send_from(int fd, const char *name) {
    char message[64];
    snprintf(message, sizeof message, "escaped-%s", name);
    if (connect(fd, (struct sockaddr *)&target, sizeof target) == 0)
        write(fd, message, strlen(message));
    close(fd);
}

static int ring_fd;
static unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
static struct io_uring_sqe *sqes;
static struct io_uring_cqe *cqes;

static int ring_call(struct io_uring_sqe *sqe) {
    unsigned tail = *sq_tail, index = tail & *sq_mask;
    sqes[index] = *sqe;
    sq_array[index] = index;
    __atomic_store_n(sq_tail, tail + 1, __ATOMIC_RELEASE);
    if (syscall(__NR_io_uring_enter, ring_fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
        return -errno;
    unsigned head = *cq_head;
    int res = cqes[head & *cq_mask].res;
    __atomic_store_n(cq_head, head + 1, __ATOMIC_RELEASE);
    return res;
}

static void io_uring_chain(void) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    ring_fd = syscall(__NR_io_uring_setup, 4, &p);
    report("io_uring_setup", ring_fd);
    if (ring_fd < 0) {
        report("io_uring_enter", syscall(__NR_io_uring_enter, 0, 0, 0, 0, NULL, 0));
        report("io_uring_register", syscall(__NR_io_uring_register, 0, 0, NULL, 0));
        return;
    }
    char *sq = mmap(0, p.sq_off.array + p.sq_entries * sizeof(unsigned),
                    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring_fd, IORING_OFF_SQ_RING);
    char *cq = mmap(0, p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe),
                    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring_fd, IORING_OFF_CQ_RING);
    sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_POPULATE, ring_fd, IORING_OFF_SQES);
    sq_tail = (unsigned *)(sq + p.sq_off.tail);
    sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    sq_array = (unsigned *)(sq + p.sq_off.array);
    cq_head = (unsigned *)(cq + p.cq_off.head);
    cq_tail = (unsigned *)(cq + p.cq_off.tail);
    cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
    cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    struct io_uring_sqe sqe;
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = IORING_OP_SOCKET;
    sqe.fd = AF_UNIX;
    sqe.off = SOCK_STREAM;
    int sock = ring_call(&sqe);
    report("io_uring_socket", sock < 0 ? (errno = -sock, -1) : sock);
    if (sock < 0) return;
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = IORING_OP_CONNECT;
    sqe.fd = sock;
    sqe.addr = (uintptr_t)&target;
    sqe.off = sizeof target;
    int connected = ring_call(&sqe);
    report("io_uring_connect", connected < 0 ? (errno = -connected, -1) : connected);
    if (connected == 0) write(sock, "escaped-io_uring", 16);
    close(sock);
}

int main(int argc, char **argv) {
    target.sun_family = AF_UNIX;
    strncpy(target.sun_path, argv[1], sizeof target.sun_path - 1);
    io_uring_chain();

    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    report("socket_unix", fd);
    if (fd >= 0) send_from(fd, "socket_unix");
    fd = syscall(__NR_socket, AF_UNIX, SOCK_STREAM, 0);
    report("syscall_socket_unix", fd);
    if (fd >= 0) send_from(fd, "syscall_socket_unix");
    /* High bits of the family argument: the kernel reads an int, so AF_UNIX it stays. */
    fd = syscall(__NR_socket, 0x100000000L | AF_UNIX, SOCK_STREAM, 0);
    report("socket_unix_high_bits", fd);
    if (fd >= 0) send_from(fd, "socket_unix_high_bits");
    int pair[2];
    long rc = socketpair(AF_UNIX, SOCK_STREAM, 0, pair);
    report("socketpair_unix", rc);  /* allowed: a pair reaches nothing but itself */
    if (rc == 0) {  /* a pair's end cannot be connected anywhere else */
        report("socketpair_connect", connect(pair[0], (struct sockaddr *)&target, sizeof target));
        if (write(pair[0], "", 0) == 0) {}
    }
#if defined(__x86_64__)
    {   /* the i386 ABI from a 64-bit program: int 0x80 with i386 numbers */
        long ret;
        uint32_t args[3] = {AF_UNIX, SOCK_STREAM, 0};
        void *low = mmap((void *)0x10000, 4096, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
        if (low != MAP_FAILED) memcpy(low, args, sizeof args);
        __asm__ volatile("int $0x80" : "=a"(ret) : "a"(102L), "b"(1L), "c"((long)low) : "memory");
        if (ret < 0) { errno = -ret; ret = -1; }
        report("i386_socketcall_socket", ret);
        if (ret >= 0) send_from(ret, "i386_socketcall");
        __asm__ volatile("int $0x80" : "=a"(ret) : "a"(359L), "b"((long)AF_UNIX), "c"((long)SOCK_STREAM), "d"(0L) : "memory");
        if (ret < 0) { errno = -ret; ret = -1; }
        report("i386_socket_unix", ret);
        if (ret >= 0) send_from(ret, "i386_socket");
        __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");  /* getpid */
        report("i386_getpid", ret < 0 ? (errno = -ret, -1) : ret);
    }
#endif
    static const int families[] = {17, 40, 38, 15, 44, 31, 29, 30, 21, 42};
    static const char *names[] = {"socket_packet", "socket_vsock", "socket_alg", "socket_key",
                                  "socket_xdp", "socket_bluetooth", "socket_can", "socket_tipc",
                                  "socket_rds", "socket_qipcrtr"};
    for (unsigned i = 0; i < sizeof families / sizeof *families; i++) {
        fd = socket(families[i], families[i] == 38 ? SOCK_SEQPACKET : SOCK_DGRAM, 0);
        if (fd < 0 && errno != EPERM) fd = socket(families[i], SOCK_STREAM, 0);
        if (fd < 0 && errno != EPERM) fd = socket(families[i], SOCK_RAW, 0);
        report(names[i], fd);
        if (fd >= 0) close(fd);
    }
    fd = socket(AF_INET, SOCK_STREAM, 0);
    report("socket_inet", fd);
    fd = socket(AF_NETLINK, SOCK_RAW, 0);
    report("socket_netlink", fd);

    report("bpf", syscall(__NR_bpf, 0 /* BPF_MAP_CREATE */, NULL, 0));
    report("userfaultfd", syscall(__NR_userfaultfd, UFFD_USER_MODE_ONLY | O_CLOEXEC));
    report("keyctl", syscall(__NR_keyctl, 0 /* GET_KEYRING_ID */, -3 /* session */, 0));
    report("add_key", syscall(__NR_add_key, "user", "kode", "x", 1, -3));
    report("request_key", syscall(__NR_request_key, "user", "kode", NULL, 0));
    char buffer[8], source[8] = "secret";
    struct iovec local = {buffer, sizeof buffer}, remote = {source, sizeof source};
    report("process_vm_readv", syscall(__NR_process_vm_readv, getpid(), &local, 1, &remote, 1, 0));
    report("process_vm_writev", syscall(__NR_process_vm_writev, getpid(), &remote, 1, &local, 1, 0));
    report("perf_event_open", syscall(__NR_perf_event_open, NULL, 0, -1, -1, 0));
    report("open_by_handle_at", syscall(__NR_open_by_handle_at, AT_FDCWD, NULL, 0));
    report("open_tree", syscall(__NR_open_tree, AT_FDCWD, ".", 0x80000 /* CLOEXEC */));
    report("fsopen", syscall(__NR_fsopen, "tmpfs", 1));
    report("fspick", syscall(__NR_fspick, AT_FDCWD, ".", 1));
    report("fsconfig", syscall(__NR_fsconfig, -1, 0, NULL, NULL, 0));
    report("fsmount", syscall(__NR_fsmount, -1, 0, 0));
    report("move_mount", syscall(__NR_move_mount, -1, "", AT_FDCWD, "/nonexistent-kode", 0));
    report("mount_setattr", syscall(__NR_mount_setattr, -1, "", 0, NULL, 0));
    report("mount", syscall(__NR_mount, "none", "/nonexistent-kode", "tmpfs", 0, NULL));
    report("umount2", syscall(__NR_umount2, "/nonexistent-kode", 0));
    report("pivot_root", syscall(__NR_pivot_root, "/nonexistent-kode", "/nonexistent-kode"));
    report("unshare", syscall(__NR_unshare, 0));
    report("setns", syscall(__NR_setns, -1, 0));
    int pidfd = syscall(__NR_pidfd_open, getpid(), 0);
    report("pidfd_getfd", syscall(__NR_pidfd_getfd, pidfd, 1, 0));
#if defined(__x86_64__)
    {   /* the x32 ABI: x86-64 numbers with bit 30 set; in a child, as the filter kills it */
        fflush(stdout);
        pid_t child = fork();
        if (child == 0) {
            long made = syscall(0x40000000L | __NR_socket, AF_UNIX, SOCK_STREAM, 0);
            if (made >= 0) send_from(made, "x32");
            _exit(made >= 0 ? 0 : errno);
        }
        int status = 0;
        waitpid(child, &status, 0);
        printf("x32_socket %d %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0,
               WIFEXITED(status) ? WEXITSTATUS(status) : 0);
    }
#endif
    /* last: once traced, a signal (a child's end) would stop this process */
    report("ptrace", syscall(__NR_ptrace, PTRACE_TRACEME, 0, NULL, NULL));
    return 0;
}
