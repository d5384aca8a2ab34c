//! Reading what a provider sends.

use crate::model::{ModelError, ModelErrorKind};

/// A body or event that does not fit the protocol.
pub(crate) fn invalid(message: impl Into<String>) -> ModelError {
    ModelError::of(ModelErrorKind::InvalidResponse, message)
}
