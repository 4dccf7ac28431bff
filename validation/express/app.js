// express-idempotency's documented minimal setup (README, "Getting started"),
// with its default in-memory adapter, plus two endpoints that charge through
// idemsim's payment provider. idemsim's validation target: nothing here
// corrects or works around the middleware.
//
//   PORT=7500 PROVIDER_URL=http://127.0.0.1:7410 node app.js
const express = require('express');
const idempotency = require('express-idempotency');

const PORT = Number(process.env.PORT || 7500);
const PROVIDER = process.env.PROVIDER_URL || 'http://127.0.0.1:7410';

const app = express();
app.use(express.json());
app.post('*', idempotency.idempotency());

async function charge(req, res) {
  const service = idempotency.getSharedIdempotencyService();
  if (service.isHit(req)) {
    return; // the middleware answered
  }
  const { amount, ref } = req.body || {};
  if (!Number.isInteger(amount) || amount <= 0) {
    return res.status(400).json({ error: 'amount must be a positive integer' });
  }
  let charged;
  try {
    const answer = await fetch(`${PROVIDER}/charges`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amount, ref }),
    });
    if (!answer.ok) {
      throw new Error(`provider answered ${answer.status}`);
    }
    charged = await answer.json();
  } catch (e) {
    // The README's "Report error in processing request".
    await service.reportError(req);
    return res.status(502).json({ error: String(e.message) });
  }
  res.status(201).json({ charge: charged.id, amount, ref, path: req.path });
}

app.post('/charges', charge);
app.post('/payments', charge);

app.listen(PORT, '127.0.0.1', () => console.log(`express-idempotency app listening on ${PORT}`));
