//! One RDMA connection: its completion task, the calls it receives and the replies it posts
//! (steps 1 to 6 of the transport's module documentation).

use super::*;

/// A posted batch, until its completion.
pub(super) struct Waiter {
    pub(super) slots: u32,
    pub(super) tx: Option<oneshot::Sender<Done>>,
}

/// What a finished batch hands back.
pub(super) struct Done {
    pub(super) status: WcStatus,
    pub(super) bufs: Vec<Buf>,
    pub(super) _keep: Vec<Bytes>,
}

pub(super) struct Conn {
    pub(super) ep: Arc<Endpoint>,
    pub(super) srv: Arc<Shared>,
    pub(super) peer: SocketAddr,
    pub(super) nego: Negotiated,
    pub(super) limits: Limits,
    pub(super) pool: Pool,
    pub(super) bulk_size: usize,
    /// The pool's bulk buffers, offered to READ (calls with a Write list).
    pub(super) bulk: Arc<dyn BulkAlloc>,
    pub(super) credits: Arc<Credits>,
    /// The device's receive queue, shared with its other connections.
    pub(super) share: Arc<DevShare>,
    /// Posted batches by token: the send-queue slots their completion frees, and who waits
    /// for it (RDMA Reads; replies are not waited for).
    pub(super) waiters: Mutex<HashMap<u64, Waiter>>,
    pub(super) next_token: AtomicU64,
    pub(super) sq: Semaphore,
    pub(super) closing: AtomicBool,
    /// Batches prepared by calls, posted by the completion task: a thread that served a call
    /// has switched its credentials (vfs::cred), and the kernel refuses uverbs commands (rxe
    /// posts through them) from a thread whose credentials differ from the opener's.
    pub(super) outbox: Mutex<Vec<(u64, Batch)>>,
    /// Wakes the completion task: batches in the outbox, or the connection is closing.
    pub(super) wake: Notify,
    /// This connection as the NFSv4.1 back channel of the sessions bound to it (RFC 8167).
    pub(super) back: Arc<dyn BackChannel>,
    /// Backward calls the client allows and has not answered.
    pub(super) bc: BackCredits,
    /// The client's traffic counters, found once for all its calls.
    pub(super) client: Arc<sunrpc::metrics::ClientStats>,
}

/// Calls to the client over its RDMA connection (see [`crate::backchannel`]). It holds the
/// connection weakly, so a session that outlives its connection does not keep it.
pub(super) struct RdmaBack {
    pub(super) conn: std::sync::Weak<Conn>,
    pub(super) id: u64,
    /// Where the connection is released should this call hold its last reference.
    pub(super) rt: tokio::runtime::Handle,
}

impl BackChannel for RdmaBack {
    fn send_call(&self, msg: xdr::Reply) -> bool {
        // called from a call's thread (a recall made while serving a call)
        self.conn
            .upgrade()
            .is_some_and(|c| Held::new(c, self.rt.clone()).send_backward(&msg))
    }

    fn id(&self) -> u64 {
        self.id
    }
}

/// A connection held by a thread that may have switched its credentials (a call's blocking
/// thread): should it hold the last reference, the connection is released on the runtime,
/// because releasing it destroys its CM id and CQ, writes to kernel devices that are refused
/// from a thread whose credentials differ from the opener's (see [`Conn::outbox`]).
pub(super) struct Held<T: Send + Sync + 'static> {
    inner: Option<Arc<T>>,
    rt: tokio::runtime::Handle,
}

impl<T: Send + Sync + 'static> Held<T> {
    pub(super) fn new(inner: Arc<T>, rt: tokio::runtime::Handle) -> Held<T> {
        Held {
            inner: Some(inner),
            rt,
        }
    }
}

impl<T: Send + Sync + 'static> std::ops::Deref for Held<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // Some until dropped
        self.inner.as_deref().expect("held until dropped")
    }
}

impl<T: Send + Sync + 'static> Drop for Held<T> {
    fn drop(&mut self) {
        // into_inner gives the value to exactly one of the last holders that use it; a holder
        // that drops the Arc plainly is on the runtime already
        if let Some(last) = self.inner.take().and_then(Arc::into_inner) {
            self.rt.spawn(async move { drop(last) });
        }
    }
}

/// Why a call stopped before its reply.
enum Fail {
    /// Answer RDMA_ERROR with this body (the connection stays).
    Error(ErrorKind),
    /// Drop the call silently.
    Discard,
    /// The connection is closing or closed.
    Closed,
}

impl From<ValidationError> for Fail {
    fn from(e: ValidationError) -> Self {
        match e.disposition() {
            Disposition::Discard => Fail::Discard,
            Disposition::ReplyError(k) => Fail::Error(k),
            Disposition::Close => Fail::Closed,
        }
    }
}

impl Conn {
    fn metrics(&self) -> &RdmaMetrics {
        &self.srv.metrics
    }

    pub(super) fn close(&self, why: &str) {
        if !self.closing.swap(true, Ordering::AcqRel) {
            tracing::debug!(peer = %self.peer, why, "closing RDMA connection");
            self.sq.close();
            // The completion task disconnects (teardown): this may run on a call's thread,
            // which must not touch the device (see `outbox`).
            self.wake.notify_one();
        }
    }

    fn fatal(&self, why: &str) {
        if !self.closing.load(Ordering::Acquire) {
            tracing::warn!(peer = %self.peer, why, "closing RDMA connection");
            RdmaMetrics::inc(&self.metrics().fatal_closes);
        }
        self.close(why);
    }

    /// Credits for a reply to a call that asked for `requested`: the connection's current share
    /// of the receive queue.
    fn grant(&self, requested: u32) -> u32 {
        let conns = self.share.conns.load(Ordering::Acquire);
        self.limits
            .grant_within(requested, self.limits.fair_share(self.share.recv, conns))
    }

    fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// The connection's completion loop; tears the connection down when it closes.
    pub(super) async fn run(self: Arc<Self>) {
        let mut comps = Vec::with_capacity(32);
        let busy = self.srv.cfg.busy_poll;
        let mut last_work = Instant::now();
        // Whether a completion event is requested and not delivered yet: a wake-up for the
        // outbox leaves the CQ armed, and arming costs a system call on some providers.
        let mut armed = false;
        'serve: loop {
            if self.flush_outbox() {
                last_work = Instant::now();
            }
            loop {
                comps.clear();
                match self.ep.poll(&mut comps) {
                    Ok(0) => break,
                    Ok(_) => {
                        last_work = Instant::now();
                        for c in comps.drain(..) {
                            self.on_completion(c);
                        }
                    }
                    Err(e) => {
                        self.fatal(&format!("polling the CQ failed: {e}"));
                        break 'serve;
                    }
                }
            }
            if self.is_closing() {
                break;
            }
            // Busy polling (--rdma-busy-poll): while work came within the window, poll again
            // after letting other tasks run instead of sleeping on the completion channel.
            if !busy.is_zero() && last_work.elapsed() < busy {
                tokio::task::yield_now().await;
                continue;
            }
            if !armed {
                if let Err(e) = self.ep.arm() {
                    self.fatal(&format!("arming the CQ failed: {e}"));
                    break;
                }
                armed = true;
            }
            // A completion that arrived before arming raised no event: poll once more.
            comps.clear();
            match self.ep.poll(&mut comps) {
                Ok(0) => {}
                Ok(_) => {
                    for c in comps.drain(..) {
                        self.on_completion(c);
                    }
                    continue;
                }
                Err(e) => {
                    self.fatal(&format!("polling the CQ failed: {e}"));
                    break;
                }
            }
            tokio::select! {
                r = self.ep.wait() => {
                    if let Err(e) = r {
                        self.fatal(&format!("waiting for completions failed: {e}"));
                        break;
                    }
                    armed = false;
                }
                _ = self.wake.notified() => {}
            }
        }
        self.teardown().await;
    }

    async fn teardown(self: &Arc<Self>) {
        self.close("teardown");
        self.ep.disconnect();
        // Let posted work flush back (the QP is in the error state) for a while, then destroy
        // the QP, which returns whatever is still pending.
        let deadline = Instant::now() + Duration::from_secs(3);
        let mut comps = Vec::new();
        while self.ep.pending_batches() > 0 && Instant::now() < deadline {
            comps.clear();
            match self.ep.poll(&mut comps) {
                Ok(0) => tokio::time::sleep(Duration::from_millis(10)).await,
                Ok(_) => {
                    for c in comps.drain(..) {
                        self.on_completion(c);
                    }
                }
                Err(_) => break,
            }
        }
        for c in self.ep.destroy() {
            self.on_completion(c);
        }
        self.outbox.lock().clear();
        self.waiters.lock().clear();
        if self.srv.conns.lock().remove(&self.ep.key()).is_some() {
            self.share.conns.fetch_sub(1, Ordering::AcqRel);
        }
        self.metrics().connections.fetch_sub(1, Ordering::Relaxed);
        tracing::info!(peer = %self.peer, "RDMA connection closed");
    }

    fn on_completion(self: &Arc<Self>, c: Completion) {
        match c {
            Completion::Recv { buf, len, status } => {
                let srq = self.ep.device().srq();
                if !status.is_ok() {
                    srq.give_back(buf);
                    if !self.is_closing() {
                        self.fatal(&format!("receive failed: {status}"));
                    }
                    return;
                }
                // Copy the message out (at most the inline size) so the receive buffer goes
                // straight back to the SRQ, whatever the program keeps of the call.
                let msg = Bytes::copy_from_slice(&buf.as_slice()[..len]);
                srq.give_back(buf);
                if self.is_closing() {
                    return;
                }
                // The client's answer to one of our backward calls: it frees a backward credit,
                // takes no forward one, and goes to whoever waits for it (as over TCP).
                if let Some(credits) = backward_reply_credits(&msg) {
                    self.bc.on_reply(credits);
                    // after the transport header: seven words with three empty chunk lists
                    sunrpc::callback::deliver(self.back.id(), msg.slice(28..));
                    RdmaMetrics::inc(&self.metrics().backward_replies);
                    return;
                }
                let (in_flight, guard) = self.credits.begin();
                if let Err(e) = self
                    .limits
                    .check_credits(in_flight, self.limits.max_credits)
                {
                    self.fatal(&e.to_string());
                    return;
                }
                // A call that needs only memory runs here, on the completion task; any other,
                // program included, on a blocking thread, whose batches come back here through
                // the outbox, to be posted (see `outbox`).
                self.serve_call_here_or_on_a_thread(msg, guard);
            }
            Completion::Batch {
                token,
                status,
                bufs,
                keep,
            } => {
                if !status.is_ok() && !self.is_closing() {
                    self.fatal(&format!("work request failed: {status}"));
                }
                let w = self.waiters.lock().remove(&token);
                if let Some(w) = w {
                    self.sq.add_permits(w.slots as usize);
                    if let Some(tx) = w.tx {
                        let _ = tx.send(Done {
                            status,
                            bufs,
                            _keep: keep,
                        });
                    }
                }
            }
        }
    }

    /// Posts `batch` (returning `credit` just before) and waits for its completion.
    async fn submit(&self, batch: Batch, credit: Option<CreditGuard>) -> Result<Done, Fail> {
        let rx = self.post(batch, credit, true).await?.ok_or(Fail::Closed)?;
        let done = rx.await.map_err(|_| Fail::Closed)?;
        if !done.status.is_ok() {
            return Err(Fail::Closed);
        }
        Ok(done)
    }

    /// Sends the RPC call `msg` to the client (the back channel): inline in one Send, within the
    /// backward credits; false when it cannot go now (no credit, no free send buffer or
    /// send-queue slot, too large for the client's receive buffers, connection closing).
    /// Never waits: the caller holds the NFSv4 state lock.
    fn send_backward(&self, msg: &xdr::Reply) -> bool {
        if self.is_closing() || !self.bc.take() {
            return false;
        }
        let rpc = msg.to_bytes();
        let grant = self.grant(self.limits.max_credits);
        let sent = backward_call(&rpc, grant, self.nego.send as usize).and_then(|m| {
            let mut sb = self.pool.try_get(Class::Send)?;
            let dst = sb.as_mut_slice().get_mut(..m.len())?;
            dst.copy_from_slice(&m);
            let batch = Batch {
                wrs: vec![WorkRequest::Send {
                    data: vec![sb.freeze(m.len())],
                    invalidate: None,
                }],
                bufs: Vec::new(),
            };
            let permit = self.sq.try_acquire().ok()?;
            permit.forget();
            self.enqueue(batch, 1, None);
            Some(())
        });
        if sent.is_none() {
            self.bc.give_back();
            return false;
        }
        RdmaMetrics::inc(&self.metrics().backward_calls);
        true
    }

    /// Posts `batch` once the send queue has room for it, returning `credit` just before.
    /// The completion frees its send-queue slots and buffers; with `wait` it is also handed
    /// to the returned receiver. A failed completion closes the connection (see
    /// [`Conn::on_completion`]), so a reply nobody waits for cannot fail unnoticed.
    async fn post(
        &self,
        batch: Batch,
        credit: Option<CreditGuard>,
        wait: bool,
    ) -> Result<Option<oneshot::Receiver<Done>>, Fail> {
        let n = batch.wrs.len() as u32;
        if n as usize > self.ep.caps().depth as usize {
            // Cannot happen with the header limits (at most 257 requests per reply, 128 per
            // call's Reads) and a send queue of at least that depth; never wait forever.
            self.fatal(&format!("a batch of {n} requests exceeds the send queue"));
            return Err(Fail::Closed);
        }
        // The slots are given back by the completion (on_completion), not by this call.
        self.sq
            .acquire_many(n)
            .await
            .map_err(|_| Fail::Closed)?
            .forget();
        let (tx, rx) = if wait {
            let (tx, rx) = oneshot::channel();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        drop(credit);
        self.enqueue(batch, n, tx);
        Ok(rx)
    }

    /// Hands `batch`, whose `slots` send-queue slots are taken, to the completion task.
    fn enqueue(&self, batch: Batch, slots: u32, tx: Option<oneshot::Sender<Done>>) {
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        self.waiters.lock().insert(token, Waiter { slots, tx });
        self.outbox.lock().push((token, batch));
        self.wake.notify_one();
    }

    /// Posts the batches calls left in the outbox (on the completion task only, see `outbox`);
    /// says whether there were any.
    fn flush_outbox(&self) -> bool {
        let batches = std::mem::take(&mut *self.outbox.lock());
        let any = !batches.is_empty();
        for (token, batch) in batches {
            if let Err(e) = self.ep.post(token, batch) {
                // Dropping the waiter's sender tells a waiting call that the batch is gone.
                if let Some(w) = self.waiters.lock().remove(&token) {
                    self.sq.add_permits(w.slots as usize);
                }
                match e {
                    PostError::Closed => {}
                    e => self.fatal(&format!("posting failed: {e}")),
                }
            }
        }
        any
    }

    /// Runs a call without Read chunks here, on the completion task, when its program can
    /// complete it without waiting for I/O ([`Dispatcher::dispatch_nonblocking`], which never
    /// switches the thread's credentials, so the task can still post), and queues its reply
    /// for posting when the buffers and send-queue slots it needs are free at once: no task
    /// spawned and woken per call. Hands any other call to a blocking thread (a wake-up and a
    /// switch, as much as the call itself costs), and a reply that would wait to a task.
    fn serve_call_here_or_on_a_thread(self: &Arc<Self>, msg: Bytes, credit: CreditGuard) {
        let tried = self
            .limits
            .accept_call(&msg)
            .ok()
            .filter(|call| call.reads.is_empty())
            .and_then(|call| {
                let origin = self.origin(&call);
                let reply = self
                    .srv
                    .disp
                    .dispatch_nonblocking(&call.inline, &origin, false)?;
                Some((call, reply))
            });
        match tried {
            Some((call, reply)) => {
                RdmaMetrics::inc(&self.metrics().calls_inline);
                self.answer_now(msg, call, reply, credit);
            }
            None => {
                let rt = tokio::runtime::Handle::current();
                let this = Held::new(self.clone(), rt.clone());
                tokio::task::spawn_blocking(move || rt.block_on(this.serve_call(msg, credit)));
            }
        }
    }

    /// [`Conn::answer`] without waiting: a reply whose buffers or send-queue slots are not free
    /// now, or that needs an error reply, goes to a task that waits for them.
    fn answer_now(
        self: &Arc<Self>,
        msg: Bytes,
        call: Call,
        reply: Option<xdr::Reply>,
        credit: CreditGuard,
    ) {
        let Some(reply) = reply else {
            RdmaMetrics::inc(&self.metrics().dropped);
            return;
        };
        let Ok((plan, invalidate)) = self.plan(&call, &reply) else {
            let this = self.clone();
            tokio::spawn(async move { this.answer(&msg, &call, Some(reply), credit).await });
            return;
        };
        if let Some((plan, credit)) = self.send_plan_now(plan, invalidate, credit) {
            let this = self.clone();
            tokio::spawn(async move {
                let _ = this.send_plan(plan, invalidate, credit).await;
            });
        }
    }

    /// Where a call came from, for the dispatcher: with a Write list, READ data goes into a
    /// registered bulk buffer the RDMA Write sends from as it is (no staging copy); without one
    /// it travels inline anyway.
    fn origin(&self, call: &Call) -> Origin {
        let bulk = (!call.header.write_list.is_empty()).then(|| self.bulk.clone());
        Origin {
            peer: self.peer,
            local: None,
            transport: TransportKind::Rdma,
            back: Some(self.back.clone()),
            bulk,
            // RDMA Writes and Sends go from registered memory: pages would be copied into it
            pages: false,
            client: Some(self.client.clone()),
        }
    }

    async fn serve_call(&self, msg: Bytes, credit: CreditGuard) {
        let call = match self.limits.accept_call(&msg) {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(peer = %self.peer, error = %e, "bad RPC-over-RDMA message");
                return self.fail(&msg, None, e.into(), credit).await;
            }
        };
        let rpc = if call.reads.is_empty() {
            RdmaMetrics::inc(&self.metrics().calls_inline);
            call.inline.clone()
        } else {
            match self.pull(&call).await {
                Ok(b) => b,
                Err(f) => return self.fail(&msg, Some(&call), f, credit).await,
            }
        };
        let origin = self.origin(&call);
        // On a blocking thread (see on_completion): the program may block on the file system.
        let reply = self.srv.disp.dispatch_from(rpc, origin);
        self.answer(&msg, &call, reply, credit).await;
    }

    /// Sends the reply to `call` (message `msg`); none: the dispatcher dropped the call.
    async fn answer(
        &self,
        msg: &Bytes,
        call: &Call,
        reply: Option<xdr::Reply>,
        credit: CreditGuard,
    ) {
        let Some(reply) = reply else {
            RdmaMetrics::inc(&self.metrics().dropped);
            return;
        };
        let (plan, invalidate) = match self.plan(call, &reply) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(peer = %self.peer, xid = call.header.xid, error = %e, "reply cannot be conveyed; answering ERR_CHUNK");
                return self
                    .fail(msg, Some(call), Fail::Error(ErrorKind::Chunk), credit)
                    .await;
            }
        };
        let _ = self.send_plan(plan, invalidate, credit).await;
    }

    /// How `reply` to `call` travels (inline, Write chunk, Reply chunk), and the R_key to
    /// invalidate with its Send when the client allows it.
    fn plan(&self, call: &Call, reply: &xdr::Reply) -> Result<(SendPlan, Option<u32>), PlanError> {
        let grant = self.grant(call.header.credits);
        let plan = plan_reply(&call.header, grant, reply, self.nego.send as usize)?;
        if tracing::enabled!(tracing::Level::DEBUG) {
            self.trace_call(call, &plan);
        }
        let invalidate = match self.nego.remote_invalidate {
            true => remote_invalidate_rkey(&call.header),
            false => None,
        };
        Ok((plan, invalidate))
    }

    fn trace_call(&self, call: &Call, plan: &SendPlan) {
        let word = |b: &[u8], i: usize| {
            b.get(i * 4..i * 4 + 4)
                .map_or(0, |w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
        };
        let rpc = &call.inline;
        // RPC reply: xid, REPLY, MSG_ACCEPTED, verifier (flavor, empty body), accept_stat,
        // then the procedure's first result word (its status).
        let first: Vec<u8> = plan
            .inline
            .iter()
            .flat_map(|b| b.iter().copied())
            .take(32)
            .collect();
        tracing::debug!(
            peer = %self.peer,
            xid = format_args!("{:#010x}", call.header.xid),
            prog = word(rpc, 3),
            vers = word(rpc, 4),
            proc_ = word(rpc, 5),
            rdma_proc = ?call.header.proc_,
            read_chunks = call.header.read_list.len(),
            write_chunks = call.header.write_list.len(),
            reply_chunk = call.header.reply_chunk.as_ref().map(|c| c.capacity()),
            reply_proc = ?plan.header.proc_,
            send_len = plan.send_len(),
            writes = plan.writes.len(),
            write_chunk_bytes = ?plan.write_chunk_bytes,
            reply_chunk_bytes = ?plan.reply_chunk_bytes,
            accept_stat = word(&first, 5),
            status = word(&first, 6),
            "RDMA call"
        );
        if word(&first, 6) != 0 && tracing::enabled!(tracing::Level::TRACE) {
            let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
            let reply: Vec<u8> = plan.inline.iter().flat_map(|b| b.iter().copied()).collect();
            tracing::trace!(call = %hex(&rpc[..rpc.len().min(600)]), reply = %hex(&reply[..reply.len().min(300)]), "RDMA call failed");
        }
    }

    /// Answers a call that failed before its reply according to `f`.
    async fn fail(&self, msg: &Bytes, call: Option<&Call>, f: Fail, credit: CreditGuard) {
        match f {
            Fail::Discard => RdmaMetrics::inc(&self.metrics().dropped),
            Fail::Closed => self.fatal("invalid message"),
            Fail::Error(kind) => {
                let grant = self.grant(call.map_or(self.limits.max_credits, |c| c.header.credits));
                let plan = match call {
                    Some(c) => SendPlan::error(c.header.xid, c.header.vers, grant, kind),
                    None => {
                        let word = |i: usize| {
                            msg.get(i * 4..i * 4 + 4)
                                .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
                        };
                        let (Some(xid), Some(vers)) = (word(0), word(1)) else {
                            RdmaMetrics::inc(&self.metrics().dropped);
                            return;
                        };
                        SendPlan::error(xid, vers, grant, kind)
                    }
                };
                RdmaMetrics::inc(&self.metrics().errors_sent);
                let _ = self.send_plan(plan, None, credit).await;
            }
        }
    }

    /// Pulls a call's Read chunks and returns the reassembled RPC call: one bulk buffer the
    /// RDMA Reads fill at their final offsets, around the inline bytes copied in (see
    /// [`crate::read_plan`]). The call, and so a WRITE payload, stays a slice of that registered
    /// buffer until the program drops it: programs copy what they keep beyond the call.
    async fn pull(&self, call: &Call) -> Result<Bytes, Fail> {
        let plan = &call.reads;
        let len = plan.message_len();
        if len > self.bulk_size {
            tracing::warn!(peer = %self.peer, len, "a call with read chunks exceeds a bulk buffer");
            return Err(Fail::Error(ErrorKind::Chunk));
        }
        if call.header.proc_ == Proc::NoMsg {
            RdmaMetrics::inc(&self.metrics().calls_long);
        } else {
            RdmaMetrics::inc(&self.metrics().calls_read_chunk);
        }
        let mut buf = self.pool.get(Class::Bulk).await;
        plan.fill(&call.inline, &mut buf.as_mut_slice()[..len])?;
        let batch = Batch {
            wrs: read_requests(plan),
            bufs: vec![buf],
        };
        let mut done = self.submit(batch, None).await?;
        RdmaMetrics::add(&self.metrics().read_bytes, plan.pull_len() as u64);
        RdmaMetrics::add(&self.metrics().call_copied_bytes, plan.copied_len() as u64);
        let msg = done.bufs.pop().ok_or(Fail::Closed)?.freeze(len);
        plan.check(&msg)?;
        Ok(msg)
    }

    /// Stages and posts the Writes and the Send of `plan` (not waiting for their completion).
    async fn send_plan(
        &self,
        plan: SendPlan,
        invalidate: Option<u32>,
        credit: CreditGuard,
    ) -> Result<(), Fail> {
        let pool = &self.pool;
        let staged = self.stage(&plan);
        let Some(bufs) = pool.get_many(Class::Bulk, staged.used.len()).await else {
            tracing::warn!(peer = %self.peer, bytes = staged.staged_bytes(), "reply too large to stage");
            let p = SendPlan::error(
                plan.header.xid,
                plan.header.vers,
                plan.header.credits,
                ErrorKind::Chunk,
            );
            RdmaMetrics::inc(&self.metrics().errors_sent);
            return Box::pin(self.send_plan(p, None, credit)).await;
        };
        let sb = pool.get(Class::Send).await;
        let batch = self.reply_batch(&plan, &staged, bufs, sb, invalidate)?;
        self.post(batch, Some(credit), false).await.map(|_| ())
    }

    /// [`Conn::send_plan`] if everything it needs is free now (staging and send buffers,
    /// send-queue slots); otherwise gives the plan and credit back, nothing taken.
    #[must_use = "a plan given back is not sent"]
    fn send_plan_now(
        &self,
        plan: SendPlan,
        invalidate: Option<u32>,
        credit: CreditGuard,
    ) -> Option<(SendPlan, CreditGuard)> {
        let staged = self.stage(&plan);
        // the Writes and the Send (see reply_batch)
        let n = staged.writes.len() + 1;
        if n > self.ep.caps().depth as usize {
            return Some((plan, credit));
        }
        let Some(bufs) = self.pool.try_get_many(Class::Bulk, staged.used.len()) else {
            return Some((plan, credit));
        };
        let Some(sb) = self.pool.try_get(Class::Send) else {
            return Some((plan, credit));
        };
        match self.sq.try_acquire_many(n as u32) {
            Ok(p) => p.forget(),
            Err(_) => return Some((plan, credit)),
        }
        match self.reply_batch(&plan, &staged, bufs, sb, invalidate) {
            Ok(batch) => {
                drop(credit);
                self.enqueue(batch, n as u32, None);
            }
            // the connection is failing (reply_batch said why)
            Err(_) => self.sq.add_permits(n),
        }
        None
    }

    /// Where each RDMA Write of `plan` takes its data from: registered memory as it is, the
    /// rest copied into staging buffers.
    fn stage(&self, plan: &SendPlan) -> crate::staging::StagedWrites {
        stage_writes(
            &plan.writes,
            &|b| self.pool.locate(b).is_some(),
            self.bulk_size,
            self.ep.caps().max_sge as usize,
        )
    }

    /// The work requests of a reply: its RDMA Writes (from registered memory, or from `bufs`
    /// where `staged` copies data in) and the Send of its header and inline part from `sb`.
    fn reply_batch(
        &self,
        plan: &SendPlan,
        staged: &crate::staging::StagedWrites,
        mut bufs: Vec<Buf>,
        mut sb: Buf,
        invalidate: Option<u32>,
    ) -> Result<Batch, Fail> {
        for c in &staged.copies {
            bufs[c.buf].as_mut_slice()[c.offset..c.offset + c.data.len()].copy_from_slice(&c.data);
        }
        let frozen: Vec<Bytes> = bufs
            .into_iter()
            .zip(&staged.used)
            .map(|(b, used)| b.freeze(*used))
            .collect();
        let mut wrs = Vec::with_capacity(staged.writes.len() + 1);
        let mut written = 0u64;
        for (remote, srcs) in &staged.writes {
            written += u64::from(remote.length);
            wrs.push(WorkRequest::Write {
                data: srcs
                    .iter()
                    .map(|s| match s {
                        Src::Direct(b) => b.clone(),
                        Src::Staged { buf, offset, len } => {
                            frozen[*buf].slice(*offset..*offset + *len)
                        }
                    })
                    .collect(),
                rkey: remote.handle,
                remote_addr: remote.offset,
            });
        }
        let Some(len) = gather_send(plan, sb.as_mut_slice()) else {
            tracing::error!(peer = %self.peer, len = plan.send_len(), "reply header exceeds the send buffer");
            self.fatal("send buffer too small");
            return Err(Fail::Closed);
        };
        wrs.push(WorkRequest::Send {
            data: vec![sb.freeze(len)],
            invalidate,
        });
        let m = self.metrics();
        match (
            &plan.header.proc_,
            plan.reply_chunk_bytes,
            plan.write_chunk_bytes.iter().any(|b| *b > 0),
        ) {
            (Proc::Error(_), _, _) => {}
            (_, Some(_), _) => RdmaMetrics::inc(&m.replies_reply_chunk),
            (_, None, true) => RdmaMetrics::inc(&m.replies_write_chunk),
            _ => RdmaMetrics::inc(&m.replies_inline),
        }
        RdmaMetrics::add(&m.write_bytes, written);
        RdmaMetrics::add(&m.staged_bytes, staged.staged_bytes() as u64);
        if invalidate.is_some() {
            RdmaMetrics::inc(&m.send_with_invalidate);
        }
        Ok(Batch {
            wrs,
            bufs: Vec::new(),
        })
    }
}

/// Registered bulk buffers offered to READ (see [`sunrpc::BulkAlloc`]): taken only when one is
/// free at once, so a busy pool makes READ use ordinary memory (and the reply is staged) rather
/// than wait.
pub(super) struct PoolBulk {
    pub(super) pool: Pool,
    pub(super) size: usize,
}

impl BulkAlloc for PoolBulk {
    fn alloc(&self, len: usize) -> Option<Box<dyn BulkBuf>> {
        if len > self.size {
            return None;
        }
        Some(Box::new(PoolBuf(self.pool.try_get(Class::Bulk)?)))
    }
}

/// A registered bulk buffer being filled with READ data.
pub(super) struct PoolBuf(verbs::Buf);

impl BulkBuf for PoolBuf {
    fn as_mut_slice(&mut self) -> &mut [u8] {
        self.0.as_mut_slice()
    }

    fn freeze(self: Box<Self>, len: usize) -> Bytes {
        self.0.freeze(len)
    }
}

#[cfg(test)]
mod tests {
    use super::Held;
    use std::sync::{Arc, Mutex};

    /// Records the name of the thread it is dropped on.
    struct Probe(Arc<Mutex<Option<String>>>);

    impl Drop for Probe {
        fn drop(&mut self) {
            let name = std::thread::current().name().map(str::to_owned);
            *self.0.lock().expect("probe lock") = Some(name.unwrap_or_default());
        }
    }

    fn dropped_on(last_on_call_thread: bool) -> String {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("runtime")
            .build()
            .expect("runtime");
        let seen = Arc::new(Mutex::new(None));
        let conn = Arc::new(Probe(seen.clone()));
        let held = Held::new(conn.clone(), rt.handle().clone());
        let on_call_thread = move || {
            std::thread::Builder::new()
                .name("call".into())
                .spawn(move || drop(held))
                .expect("thread")
                .join()
                .expect("call thread")
        };
        if last_on_call_thread {
            drop(conn);
            on_call_thread();
        } else {
            on_call_thread();
            drop(conn);
        }
        for _ in 0..500 {
            if let Some(name) = seen.lock().expect("probe lock").clone() {
                return name;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        panic!("the connection was never released");
    }

    #[test]
    fn a_call_threads_last_reference_is_released_on_the_runtime() {
        assert_eq!(dropped_on(true), "runtime");
    }

    #[test]
    fn a_runtime_holders_last_reference_is_released_where_it_drops() {
        // the call thread let go first: the plain drop on this thread is the last
        let here = std::thread::current().name().map(str::to_owned);
        assert_eq!(Some(dropped_on(false)), here);
    }
}
