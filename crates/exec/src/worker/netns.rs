//! Route removal inside a container's network namespace (Docker before 26
//! gives containers on an internal network a default route to the host).

use std::io;

use netlink_packet_core::{NLM_F_ACK, NLM_F_REQUEST, NetlinkMessage, NetlinkPayload};
use netlink_packet_route::route::{RouteHeader, RouteMessage, RouteScope};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};

/// Deletes the IPv4 default route of the process `pid`'s network namespace.
pub fn drop_default_route(pid: i64) -> io::Result<()> {
    let namespace = std::fs::File::open(format!("/proc/{pid}/ns/net"))?;
    // setns changes only the calling thread, so use one that ends right after.
    std::thread::spawn(move || {
        nix::sched::setns(&namespace, nix::sched::CloneFlags::CLONE_NEWNET)?;
        delete_default_route()
    })
    .join()
    .map_err(|_| io::Error::other("the namespace thread panicked"))?
}

fn delete_default_route() -> io::Result<()> {
    // 0.0.0.0/0 in the main table: no destination attribute, prefix length
    // 0. As a delete filter, scope "nowhere" matches a route of any scope.
    let mut route = RouteMessage::default();
    route.header.address_family = AddressFamily::Inet;
    route.header.table = RouteHeader::RT_TABLE_MAIN;
    route.header.scope = RouteScope::NoWhere;
    let mut request = NetlinkMessage::from(RouteNetlinkMessage::DelRoute(route));
    request.header.flags = NLM_F_REQUEST | NLM_F_ACK;
    request.header.sequence_number = 1;
    request.finalize();
    let mut bytes = vec![0; request.buffer_len()];
    request.serialize(&mut bytes);

    let socket = Socket::new(NETLINK_ROUTE)?;
    // Port 0: the kernel.
    socket.send_to(&bytes, &SocketAddr::new(0, 0), 0)?;
    let (reply, _) = socket.recv_from_full()?;
    let reply = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&reply)
        .map_err(|e| io::Error::other(format!("a netlink answer that does not parse: {e}")))?;
    match reply.payload {
        // The acknowledgement carries no error code.
        NetlinkPayload::Error(ack) if ack.code.is_none() => Ok(()),
        NetlinkPayload::Error(nack) => match nack.to_io() {
            // No default route (Docker 26 and later): nothing to delete.
            e if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
            e => Err(e),
        },
        other => Err(io::Error::other(format!(
            "an unexpected netlink answer: {other:?}"
        ))),
    }
}
