//! The seccomp filter of a sandboxed worker, as the classic BPF program bwrap
//! loads from `--seccomp FD` right before it runs the worker.
//!
//! A deny list in the spirit of Docker's default profile, written by hand
//! (a few dozen instructions, no library): the calls a process with no
//! capabilities in its own namespaces would still use to attack the kernel
//! or get out (ptrace, mounts, keys, BPF, userfaultfd, perf, new namespaces,
//! kexec, modules, io_uring, file handles), and socket families that no
//! network namespace confines (AF_VSOCK reaches the VM's host). A call on
//! the list fails with EPERM, so Python raises `PermissionError` and the
//! worker lives on; a call from another architecture (32-bit `int 0x80`, the
//! x32 ABI) kills the process, since no list covers those numbers.

/// `struct sock_filter`: one instruction of a classic BPF program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Insn {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

const BPF_LD_W_ABS: u16 = 0x20; // BPF_LD (0) | BPF_W (0) | BPF_ABS
const BPF_JEQ_K: u16 = 0x05 | 0x10; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_JGE_K: u16 = 0x05 | 0x30; // BPF_JMP | BPF_JGE | BPF_K
const BPF_JSET_K: u16 = 0x05 | 0x40; // BPF_JMP | BPF_JSET | BPF_K
const BPF_RET_K: u16 = 0x06;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const RET_ERRNO: u32 = 0x0005_0000;

/// Offsets in `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// The low 32 bits of the first argument (little-endian).
const ARG0_LOW: u32 = 16;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// x32 system calls are numbered from here on x86_64.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// Every `CLONE_NEW*` flag: `clone` may make threads and processes, never
/// namespaces (bwrap's `--disable-userns` stops new user namespaces too).
const CLONE_NEW_ANY: u32 = 0x0002_0000 // NEWNS
    | 0x0200_0000 // NEWCGROUP
    | 0x0400_0000 // NEWUTS
    | 0x0800_0000 // NEWIPC
    | 0x1000_0000 // NEWUSER
    | 0x2000_0000 // NEWPID
    | 0x4000_0000 // NEWNET
    | 0x0000_0080; // NEWTIME

/// Socket families a worker may open: local, IP (only its own loopback
/// exists in its network namespace) and netlink (the resolver asks it which
/// addresses exist). Anything else, AF_VSOCK, AF_PACKET, AF_BLUETOOTH, ...,
/// fails with EAFNOSUPPORT.
const ALLOWED_FAMILIES: &[u32] = &[
    libc::AF_UNIX as u32,
    libc::AF_INET as u32,
    libc::AF_INET6 as u32,
    libc::AF_NETLINK as u32,
];

/// The calls denied with EPERM, whatever their arguments.
fn denied() -> Vec<libc::c_long> {
    let mut calls = vec![
        // Reading or steering other processes.
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_kcmp,
        libc::SYS_pidfd_getfd,
        // Namespaces and mounts.
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_mount_setattr,
        // Kernel attack surface a worker never needs.
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_bpf,
        libc::SYS_userfaultfd,
        libc::SYS_perf_event_open,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_fanotify_init,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_move_pages,
        libc::SYS_migrate_pages,
        // The machine's own controls.
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_acct,
        libc::SYS_quotactl,
        libc::SYS_syslog,
        libc::SYS_settimeofday,
        libc::SYS_clock_settime,
        libc::SYS_clock_adjtime,
        libc::SYS_adjtimex,
        libc::SYS_sethostname,
        libc::SYS_setdomainname,
        libc::SYS_vhangup,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        libc::SYS_iopl,
        libc::SYS_ioperm,
        libc::SYS_uselib,
        libc::SYS__sysctl,
        libc::SYS_lookup_dcookie,
    ]);
    calls
}

fn stmt(code: u16, k: u32) -> Insn {
    Insn {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
    Insn { code, jt, jf, k }
}

/// A system call number as the filter compares it.
fn nr(call: libc::c_long) -> u32 {
    u32::try_from(call).unwrap_or(u32::MAX)
}

/// The program, instruction by instruction.
fn program() -> Vec<Insn> {
    let eperm = RET_ERRNO | libc::EPERM as u32;
    let mut p = vec![
        stmt(BPF_LD_W_ABS, ARCH),
        jump(BPF_JEQ_K, AUDIT_ARCH, 1, 0),
        stmt(BPF_RET_K, RET_KILL_PROCESS),
        stmt(BPF_LD_W_ABS, NR),
    ];
    #[cfg(target_arch = "x86_64")]
    p.extend([
        jump(BPF_JGE_K, X32_SYSCALL_BIT, 0, 1),
        stmt(BPF_RET_K, RET_KILL_PROCESS),
    ]);
    for call in denied() {
        p.push(jump(BPF_JEQ_K, nr(call), 0, 1));
        p.push(stmt(BPF_RET_K, eperm));
    }
    // clone3 passes its flags in memory the filter cannot read: ENOSYS makes
    // the C library fall back to clone, whose flags it can.
    p.push(jump(BPF_JEQ_K, nr(libc::SYS_clone3), 0, 1));
    p.push(stmt(BPF_RET_K, RET_ERRNO | libc::ENOSYS as u32));
    p.extend([
        jump(BPF_JEQ_K, nr(libc::SYS_clone), 0, 4),
        stmt(BPF_LD_W_ABS, ARG0_LOW),
        jump(BPF_JSET_K, CLONE_NEW_ANY, 0, 1),
        stmt(BPF_RET_K, eperm),
        stmt(BPF_RET_K, RET_ALLOW),
    ]);
    // socket(family, ...): only the allowed families.
    let families = u8::try_from(ALLOWED_FAMILIES.len()).unwrap_or(u8::MAX);
    p.push(jump(BPF_JEQ_K, nr(libc::SYS_socket), 0, families + 2));
    p.push(stmt(BPF_LD_W_ABS, ARG0_LOW));
    for (i, family) in ALLOWED_FAMILIES.iter().enumerate() {
        let to_allow = families - u8::try_from(i).unwrap_or(0);
        p.push(jump(BPF_JEQ_K, *family, to_allow, 0));
    }
    p.push(stmt(BPF_RET_K, RET_ERRNO | libc::EAFNOSUPPORT as u32));
    p.push(stmt(BPF_RET_K, RET_ALLOW));
    p
}

/// The program as the bytes bwrap reads from its `--seccomp` descriptor: an
/// array of `struct sock_filter` in the machine's byte order.
pub fn compiled() -> Vec<u8> {
    let program = program();
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for insn in program {
        bytes.extend_from_slice(&insn.code.to_ne_bytes());
        bytes.push(insn.jt);
        bytes.push(insn.jf);
        bytes.extend_from_slice(&insn.k.to_ne_bytes());
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the program on one call, as the kernel would.
    fn verdict(nr: u32, arch: u32, arg0: u64) -> u32 {
        let program = program();
        let mut acc = 0u32;
        let mut pc = 0usize;
        loop {
            let insn = program[pc];
            pc += 1;
            match insn.code {
                BPF_LD_W_ABS => {
                    acc = match insn.k {
                        NR => nr,
                        ARCH => arch,
                        ARG0_LOW => (arg0 & 0xffff_ffff) as u32,
                        other => panic!("load of offset {other}"),
                    }
                }
                BPF_RET_K => return insn.k,
                code => {
                    let taken = match code {
                        BPF_JEQ_K => acc == insn.k,
                        BPF_JGE_K => acc >= insn.k,
                        BPF_JSET_K => acc & insn.k != 0,
                        other => panic!("instruction {other:#x}"),
                    };
                    pc += usize::from(if taken { insn.jt } else { insn.jf });
                }
            }
        }
    }

    fn call(nr: libc::c_long, arg0: u64) -> u32 {
        verdict(super::nr(nr), AUDIT_ARCH, arg0)
    }

    const EPERM: u32 = RET_ERRNO | libc::EPERM as u32;

    #[test]
    fn escape_calls_are_denied_with_eperm() {
        for nr in [
            libc::SYS_ptrace,
            libc::SYS_mount,
            libc::SYS_keyctl,
            libc::SYS_bpf,
            libc::SYS_userfaultfd,
            libc::SYS_perf_event_open,
            libc::SYS_unshare,
            libc::SYS_setns,
            libc::SYS_kexec_load,
            libc::SYS_finit_module,
            libc::SYS_io_uring_setup,
            libc::SYS_open_by_handle_at,
        ] {
            assert_eq!(call(nr, 0), EPERM, "system call {nr}");
        }
    }

    #[test]
    fn ordinary_calls_are_allowed() {
        for nr in [
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_openat,
            libc::SYS_mmap,
            libc::SYS_futex,
            libc::SYS_exit_group,
        ] {
            assert_eq!(call(nr, 0), RET_ALLOW, "system call {nr}");
        }
    }

    #[test]
    fn clone_makes_threads_but_no_namespaces() {
        let thread = (libc::CLONE_VM | libc::CLONE_THREAD | libc::CLONE_SIGHAND) as u64;
        assert_eq!(call(libc::SYS_clone, thread), RET_ALLOW);
        assert_eq!(call(libc::SYS_clone, libc::SIGCHLD as u64), RET_ALLOW);
        for flag in [libc::CLONE_NEWUSER, libc::CLONE_NEWNET, libc::CLONE_NEWNS] {
            let flags = (flag | libc::SIGCHLD) as u64;
            assert_eq!(call(libc::SYS_clone, flags), EPERM, "flag {flag:#x}");
        }
        assert_eq!(call(libc::SYS_clone3, 0), RET_ERRNO | libc::ENOSYS as u32);
    }

    #[test]
    fn vsock_and_raw_packet_sockets_are_refused() {
        let refused = RET_ERRNO | libc::EAFNOSUPPORT as u32;
        assert_eq!(call(libc::SYS_socket, libc::AF_VSOCK as u64), refused);
        assert_eq!(call(libc::SYS_socket, libc::AF_PACKET as u64), refused);
        for family in [
            libc::AF_UNIX,
            libc::AF_INET,
            libc::AF_INET6,
            libc::AF_NETLINK,
        ] {
            assert_eq!(call(libc::SYS_socket, family as u64), RET_ALLOW);
        }
    }

    #[test]
    fn another_architecture_or_abi_is_killed() {
        assert_eq!(verdict(0, 0x4000_0003, 0), RET_KILL_PROCESS); // i386
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            verdict(X32_SYSCALL_BIT | 1, AUDIT_ARCH, 0),
            RET_KILL_PROCESS
        );
    }

    #[test]
    fn the_program_is_whole_instructions() {
        assert_eq!(compiled().len() % 8, 0);
        assert!(program().len() < 4096); // BPF_MAXINSNS
    }
}
