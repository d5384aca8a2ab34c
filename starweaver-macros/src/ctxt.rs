//! Collects errors so the user sees every misuse at once (after `serde_derive`'s `Ctxt`).

use std::cell::RefCell;
use std::fmt::Display;

use quote::ToTokens;

/// An error sink; [`check`](Ctxt::check) must be called before it is dropped.
pub(crate) struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Self { errors: RefCell::new(Some(Vec::new())) }
    }

    /// Records an error spanned on `tokens`.
    pub(crate) fn error_spanned_by(&self, tokens: impl ToTokens, message: impl Display) {
        self.syn_error(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// Records a parse error as it is.
    pub(crate) fn syn_error(&self, err: syn::Error) {
        self.errors.borrow_mut().as_mut().expect("errors already checked").push(err);
    }

    /// Every error recorded, combined into one.
    pub(crate) fn check(self) -> syn::Result<()> {
        let mut errors = self.errors.take().expect("errors already checked").into_iter();
        let Some(mut combined) = errors.next() else { return Ok(()) };
        for err in errors {
            combined.combine(err);
        }
        Err(combined)
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        assert!(std::thread::panicking() || self.errors.borrow().is_none(), "forgot to check for errors");
    }
}
