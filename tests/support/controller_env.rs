//! The environment of the controller suites: a [`TestCluster`] (either server), the admin's,
//! alice's and bob's clients, NAC's controller identity (its service account, as the
//! controller builds its client in production), and Velero's object store; Velero (the
//! simulator) and NAC's controllers are started on request, each as its own service account.
//!
//! A suite with more to hold (a tenant namespace of its own, a recorder of requests) keeps a
//! thin struct around this one.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use kube::Client;
use nac::api::client_identity::Component;
use nac::controllers::{self, Context};
use nac::sim::demo::{CONTROLLER_SERVICE_ACCOUNT, OADP_NAMESPACE};
use nac::sim::velero::engine::VeleroSimulator;
use nac::sim::velero::options::SimulatorOptions;

use super::cluster::TestCluster;

/// One case's cluster, clients and Velero object store.
pub struct ControllerEnv {
    /// Held for the whole case (on the real server, the cases of one binary take turns).
    pub cluster: TestCluster,
    pub admin: Client,
    pub alice: Client,
    pub bob: Client,
    /// NAC's controller identity (`openshift-adp/nac-controller`, `Component::Controller`).
    pub controller: Client,
    /// Velero's object store (kept as long as the case runs).
    pub object_store: tempfile::TempDir,
}

impl ControllerEnv {
    /// The clients on `cluster`; nothing started yet.
    pub async fn new(cluster: TestCluster) -> ControllerEnv {
        let admin = cluster.admin();
        let controller = cluster.client_as(
            &cluster
                .sa_token(OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT)
                .await,
            Component::Controller,
        );
        ControllerEnv {
            alice: cluster.user("alice"),
            bob: cluster.user("bob"),
            cluster,
            admin,
            controller,
            object_store: tempfile::tempdir().unwrap(),
        }
    }

    /// Velero on `cluster` (its options adjusted by `configure`, its download links leading
    /// nowhere) and, when `with_controllers`, NAC's controllers.
    pub async fn start(
        cluster: TestCluster,
        with_controllers: bool,
        configure: impl FnOnce(&mut SimulatorOptions),
    ) -> ControllerEnv {
        Self::start_with(cluster, with_controllers, false, configure).await
    }

    /// [`ControllerEnv::start`], with Velero's signed downloads served on a free loopback port
    /// when `serve_downloads`.
    pub async fn start_with(
        cluster: TestCluster,
        with_controllers: bool,
        serve_downloads: bool,
        configure: impl FnOnce(&mut SimulatorOptions),
    ) -> ControllerEnv {
        let env = ControllerEnv::new(cluster).await;
        if serve_downloads {
            env.start_velero_serving_downloads(configure).await;
        } else {
            env.start_velero(configure).await;
        }
        if with_controllers {
            env.start_controllers();
        }
        env
    }

    /// Starts Velero (the simulator, resyncing every 100 ms, then adjusted by `configure`);
    /// its signed download links lead nowhere (`http://127.0.0.1:9/`). Returns a handle on it.
    pub async fn start_velero(
        &self,
        configure: impl FnOnce(&mut SimulatorOptions),
    ) -> VeleroSimulator {
        let base = url::Url::parse("http://127.0.0.1:9/").unwrap();
        let simulator =
            super::velero_simulator(&self.cluster, self.object_store.path(), base, configure).await;
        tokio::spawn(simulator.clone().run());
        simulator
    }

    /// [`ControllerEnv::start_velero`], with its signed downloads served on a free loopback
    /// port.
    pub async fn start_velero_serving_downloads(
        &self,
        configure: impl FnOnce(&mut SimulatorOptions),
    ) -> VeleroSimulator {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = url::Url::parse(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
        let simulator =
            super::velero_simulator(&self.cluster, self.object_store.path(), base, configure).await;
        let router = simulator.download_router();
        tokio::spawn(async move { axum::serve(listener, router).await });
        tokio::spawn(simulator.clone().run());
        simulator
    }

    /// The controllers' context, as the controller identity.
    pub fn context(&self) -> Arc<Context> {
        Arc::new(Context::new(self.controller.clone(), OADP_NAMESPACE))
    }

    /// Starts all of NAC's controllers as the controller identity.
    pub fn start_controllers(&self) {
        tokio::spawn(controllers::run(self.context()));
    }
}
