//! Streams fetched a page at a time: every "all of them" read (a model's
//! objects, a relation's members, a query's results) as a `Stream` whose
//! memory is one page, whatever the number of items.

use std::future::Future;

use futures_util::stream::{self, Stream, StreamExt as _};

use crate::Result;

/// The items of pages fetched one after the other: `next(state)` fetches
/// a page, giving its items and the state of the next page (`None` after
/// the last). An error of a page's request is the stream's last item.
pub(crate) fn paged<S, T, F, Fut>(
    state: S,
    mut next: F,
) -> impl Stream<Item = Result<T>> + Send + Unpin + 'static
where
    S: Send + 'static,
    T: Send + 'static,
    F: FnMut(S) -> Fut + Send + 'static,
    Fut: Future<Output = Result<(Vec<Result<T>>, Option<S>)>> + Send + 'static,
{
    stream::unfold(Some(state), move |state| {
        let page = state.map(&mut next);
        async move {
            match page?.await {
                Ok((items, next)) => Some((items, next)),
                Err(err) => Some((vec![Err(err)], None)),
            }
        }
    })
    .flat_map(stream::iter)
    // Boxed, so that the stream is `Unpin`: `try_next` and `next` then
    // work on it as it is.
    .boxed()
}
