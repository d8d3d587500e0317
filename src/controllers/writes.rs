//! The writes every reconciler makes the same way: a finalizer added or removed as a
//! compare-and-swap (no other controller's finalizer is lost), deletes that accept "already
//! gone", creates that accept "already there".
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::ControllerError;

/// `finalizer` present (or absent) on `object`; the patch carries the resourceVersion just
/// read, so a concurrent change makes it fail with a conflict instead of being overwritten.
/// The resourceVersion the patch made (`Some("")` when the server gave none); `None` when the
/// object is already gone.
pub async fn set_finalizer<K>(
    api: &Api<K>,
    object: &K,
    finalizer: &str,
    present: bool,
) -> Result<Option<String>, ControllerError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let meta = object.meta();
    let mut list = meta.finalizers.clone().unwrap_or_default();
    list.retain(|f| f != finalizer);
    if present {
        list.push(finalizer.to_string());
    }
    let patch = json!({"metadata": {"finalizers": list, "resourceVersion": meta.resource_version}});
    let name = meta.name.clone().unwrap_or_default();
    match api
        .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
        .await
    {
        Ok(patched) => Ok(Some(
            patched.meta().resource_version.clone().unwrap_or_default(),
        )),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Deletes `name`; true when this call deleted it, false when it was already gone.
pub async fn delete_if_present<K>(api: &Api<K>, name: &str) -> Result<bool, ControllerError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Creates `object`; true when this call created it, false when it already existed (another
/// replica or an earlier attempt made it: the next pass finds it).
pub async fn create_if_absent<K>(api: &Api<K>, object: &K) -> Result<bool, ControllerError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(e) => Err(e.into()),
    }
}
