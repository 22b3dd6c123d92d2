// The seccomp program every sandboxed program runs under (decision 0250): no Unix-domain or vsock sockets, no Unix
// datagram pairs, no io_uring, no change to the signal that ends the program with bwrap. A read-only bind mount does
// not stop connect() or sendto() to a socket file, vsock is not namespaced, and io_uring's socket and connect
// operations pass beside seccomp, so these are the ways out of the sandbox's empty network that the mounts leave open.
// Classic BPF, written out by hand for the two architectures bubblewrap is used on; any other gets no filter.

/** The file descriptor bubblewrap reads the compiled filter from (`--seccomp FD`). */
export const SECCOMP_FD = 4;

// <linux/filter.h>, <linux/seccomp.h>, <linux/audit.h>
const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_RET_K = 0x06;
const BPF_ALU_AND_K = 0x54;
const SECCOMP_RET_KILL_PROCESS = 0x80000000;
const SECCOMP_RET_ERRNO = 0x00050000;
const SECCOMP_RET_ALLOW = 0x7fff0000;
// struct seccomp_data: nr at 0, arch at 4, args[0] at 16, args[1] at 24 (low 32 bits first: little-endian machines).
const NR = 0;
const ARCH = 4;
const ARG0_LOW = 16;
const ARG1_LOW = 24;
const EPERM = 1;
const EACCES = 13;
const ENOSYS = 38;
const AF_UNIX = 1;
/** Not namespaced: with an empty network namespace a program still reaches the hypervisor's and the host's services. */
const AF_VSOCK = 40;
const PR_SET_PDEATHSIG = 1;
const SOCK_DGRAM = 2;
/** The socket type in `type`'s low bits; SOCK_NONBLOCK and SOCK_CLOEXEC are above. */
const SOCK_TYPE_MASK = 0xf;
const X32_SYSCALL_BIT = 0x40000000;

interface Architecture {
  audit: number;
  socket: number;
  ioUringSetup: number;
  prctl: number;
  socketpair: number;
  /** x86-64 also takes x32 system calls (numbers with X32_SYSCALL_BIT) under the same audit architecture. */
  x32: boolean;
}

const ARCHITECTURES: Partial<Record<NodeJS.Architecture, Architecture>> = {
  x64: { audit: 0xc000003e, socket: 41, ioUringSetup: 425, prctl: 157, socketpair: 53, x32: true },
  arm64: { audit: 0xc00000b7, socket: 198, ioUringSetup: 425, prctl: 167, socketpair: 199, x32: false },
};

type Instruction = [code: number, jt: number, jf: number, k: number];

/**
 * The compiled filter for `arch` (default: this process's), or undefined where none is written. A system call of
 * another architecture (a 32-bit program on a 64-bit kernel) kills the program: its numbers mean other calls.
 * `socket(AF_UNIX, …)`, `socket(AF_VSOCK, …)` and `io_uring_setup` fail with EACCES; `prctl(PR_SET_PDEATHSIG, …)`
 * fails with EPERM (bubblewrap set it before the filter: the program dies with bwrap); `socketpair(AF_UNIX,
 * SOCK_DGRAM, …)` fails with EACCES (its sockets can sendto() a path); other socketpairs and every other call are
 * allowed.
 */
export function seccompFilter(arch: NodeJS.Architecture = process.arch): Buffer | undefined {
  const a = ARCHITECTURES[arch];
  if (a === undefined) return undefined;
  const program: Instruction[] = [
    [BPF_LD_W_ABS, 0, 0, ARCH],
    [BPF_JEQ_K, 1, 0, a.audit],
    [BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS],
    [BPF_LD_W_ABS, 0, 0, NR],
    ...(a.x32
      ? ([
          [BPF_JGE_K, 0, 1, X32_SYSCALL_BIT],
          [BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS],
        ] satisfies Instruction[])
      : []),
    // io_uring_setup: jump to the EACCES refusal; prctl, socketpair, socket: look at their arguments; else allow.
    [BPF_JEQ_K, 14, 0, a.ioUringSetup],
    [BPF_JEQ_K, 5, 0, a.prctl],
    [BPF_JEQ_K, 7, 0, a.socketpair],
    [BPF_JEQ_K, 0, 12, a.socket],
    [BPF_LD_W_ABS, 0, 0, ARG0_LOW],
    [BPF_JEQ_K, 9, 0, AF_UNIX],
    [BPF_JEQ_K, 8, 9, AF_VSOCK],
    // prctl(PR_SET_PDEATHSIG, …): the program, PID 1 of its namespace, would outlive a Cairn killed outright.
    [BPF_LD_W_ABS, 0, 0, ARG0_LOW],
    [BPF_JEQ_K, 0, 7, PR_SET_PDEATHSIG],
    [BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM],
    // socketpair(AF_UNIX, SOCK_DGRAM, …): a datagram socket can sendto() any socket path, so only it is refused
    // (a stream or seqpacket pair stays connected to its peer).
    [BPF_LD_W_ABS, 0, 0, ARG0_LOW],
    [BPF_JEQ_K, 0, 4, AF_UNIX],
    [BPF_LD_W_ABS, 0, 0, ARG1_LOW],
    [BPF_ALU_AND_K, 0, 0, SOCK_TYPE_MASK],
    [BPF_JEQ_K, 0, 1, SOCK_DGRAM],
    [BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EACCES],
    [BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW],
  ];
  // struct sock_filter { __u16 code; __u8 jt; __u8 jf; __u32 k; }, in the machine's (little-endian) order.
  const bytes = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], i) => {
    bytes.writeUInt16LE(code, i * 8);
    bytes.writeUInt8(jt, i * 8 + 2);
    bytes.writeUInt8(jf, i * 8 + 3);
    bytes.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return bytes;
}
