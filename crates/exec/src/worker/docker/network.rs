//! The internal bridge network every gateway on one engine shares: made on
//! first use, never with a route out.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use bollard::Docker;
use bollard::errors::Error as DockerApiError;
use bollard::models::NetworkCreateRequest;
use bollard::query_parameters::ListNetworksOptions;

use super::super::WorkerError;
use super::{NETWORK, WORKER_LABEL};

/// The shared internal network (made on first use) and its gateway address.
pub(super) async fn ensure_network(docker: &Docker) -> Result<(String, Ipv4Addr), WorkerError> {
    let failed = |e: DockerApiError| WorkerError::Docker(format!("network {NETWORK}: {e}"));
    let mut networks = named_networks(docker).await.map_err(failed)?;
    if networks.is_empty() {
        let request = NetworkCreateRequest {
            name: NETWORK.into(),
            driver: Some("bridge".into()),
            internal: Some(true),
            options: Some(HashMap::from([(
                "com.docker.network.bridge.enable_icc".into(),
                "false".into(),
            )])),
            labels: Some(HashMap::from([(WORKER_LABEL.into(), "1".into())])),
            ..Default::default()
        };
        docker.create_network(request).await.map_err(failed)?;
        networks = named_networks(docker).await.map_err(failed)?;
    }
    // API 1.41 lets two gateways starting at once both create the network; all
    // of them use the oldest and remove the others.
    networks.sort_by(|a, b| (&a.created, &a.id).cmp(&(&b.created, &b.id)));
    let mut networks = networks.into_iter();
    let chosen = networks
        .next()
        .ok_or_else(|| WorkerError::Docker(format!("network {NETWORK} vanished")))?;
    for extra in networks {
        if let Some(id) = extra.id {
            let _ = docker.remove_network(&id).await;
        }
    }
    if chosen.internal != Some(true) {
        return Err(WorkerError::Docker(format!(
            "network {NETWORK} exists but is not internal (it would give workers a route out); remove it with `docker network rm {NETWORK}`"
        )));
    }
    let gateway = chosen
        .ipam
        .and_then(|ipam| ipam.config)
        .into_iter()
        .flatten()
        .find_map(|c| c.gateway.and_then(|g| g.parse::<Ipv4Addr>().ok()))
        .ok_or_else(|| WorkerError::Docker(format!("network {NETWORK} has no IPv4 gateway")))?;
    let id = chosen.id.unwrap_or_else(|| NETWORK.to_owned());
    Ok((id, gateway))
}

async fn named_networks(docker: &Docker) -> Result<Vec<bollard::models::Network>, DockerApiError> {
    let options = ListNetworksOptions {
        filters: Some(HashMap::from([("name".into(), vec![NETWORK.into()])])),
    };
    let all = docker.list_networks(Some(options)).await?;
    // The name filter matches substrings.
    Ok(all
        .into_iter()
        .filter(|n| n.name.as_deref() == Some(NETWORK))
        .collect())
}
