import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { MetricsExposition } from './metrics.ts';

/**
 * With WORKERS > 1 every worker counts in its own registry, and the workers share one port: a
 * scrape reaches whichever worker the primary deals the connection to. Answering with that
 * worker's own counts would make every counter jump between workers from scrape to scrape,
 * which `rate()` reads as resets. So a worker that is scraped asks the primary, the primary
 * gathers every serving worker's registry over the cluster's IPC channel and sums them with
 * prom-client's `AggregatorRegistry.aggregate` (gauges by their own rule: health by its
 * minimum, event-loop lag by its average), and the answer goes back through the worker that was
 * asked. One address, one token check, and no listener of its own in the primary.
 *
 * prom-client's `clusterMetrics()` does the gathering too, but asks every connected worker,
 * including one still starting that has no registry yet, and then waits 5 s for an answer that
 * never comes; here only workers that announced they serve are asked.
 */

/** Worker → primary: a scrape arrived; answer with the whole cluster's metrics. */
const SCRAPE = 'tollwatch:metrics:scrape';
/** Primary → worker: send your registry's metrics. */
const COLLECT = 'tollwatch:metrics:collect';
/** Worker → primary: this worker's metrics, as `getMetricsAsJSON` gives them. */
const LOCAL = 'tollwatch:metrics:local';
/** Primary → worker: the summed exposition, or why there is none. */
const CLUSTER = 'tollwatch:metrics:cluster';

/** How long the primary waits for every worker's metrics. */
const GATHER_TIMEOUT_MS = 2000;
/** How long a scraped worker waits for the primary's answer: the gathering, and a margin. */
const SCRAPE_TIMEOUT_MS = 3000;

interface Message {
  type: string;
  id: number;
  metrics?: unknown;
  text?: string;
  error?: string;
}

function isMessage(message: unknown, type: string): message is Message {
  return typeof message === 'object' && message !== null && (message as Message).type === type && typeof (message as Message).id === 'number';
}

/**
 * In a worker: lets the primary read `registry`, and returns the exposition of a scrape, which
 * is the whole cluster's. Rejects when the primary cannot gather it in time.
 */
export function workerExposition(registry: Registry): MetricsExposition {
  const waiting = new Map<number, (answer: Message) => void>();
  let next = 0;
  process.on('message', (message: unknown) => {
    if (isMessage(message, COLLECT)) {
      registry.getMetricsAsJSON().then(
        (metrics) => process.send?.({ type: LOCAL, id: message.id, metrics }, undefined, {}, () => {}),
        (err: Error) => process.send?.({ type: LOCAL, id: message.id, error: err.message }, undefined, {}, () => {}),
      );
    } else if (isMessage(message, CLUSTER)) {
      waiting.get(message.id)?.(message);
    }
  });
  return {
    contentType: registry.contentType,
    text: () =>
      new Promise<string>((resolve, reject) => {
        const id = next++;
        const timer = setTimeout(() => settle({ type: CLUSTER, id, error: 'the primary did not answer in time' }), SCRAPE_TIMEOUT_MS);
        timer.unref();
        function settle(answer: Message) {
          clearTimeout(timer);
          waiting.delete(id);
          if (answer.text !== undefined) resolve(answer.text);
          else reject(new Error(`cluster metrics: ${answer.error ?? 'no answer'}`));
        }
        waiting.set(id, settle);
        process.send?.({ type: SCRAPE, id }, undefined, {}, (err: Error | null) => {
          if (err) settle({ type: CLUSTER, id, error: err.message });
        });
      }),
  };
}

/** In the primary: answers workers' scrapes with the sum over `serving()`, the workers that serve. */
export function answerClusterScrapes(serving: () => Iterable<Worker>): void {
  const gatherings = new Map<number, (worker: Worker, answer: Message) => void>();
  let next = 0;
  cluster.on('message', (worker, message: unknown) => {
    if (isMessage(message, SCRAPE)) {
      gather([...serving()].filter((w) => w.isConnected())).then(
        (text) => worker.send({ type: CLUSTER, id: message.id, text }, undefined, () => {}),
        (err: Error) => worker.send({ type: CLUSTER, id: message.id, error: err.message }, undefined, () => {}),
      );
    } else if (isMessage(message, LOCAL)) {
      gatherings.get(message.id)?.(worker, message);
    }
  });

  function gather(workers: Worker[]): Promise<string> {
    return new Promise((resolve, reject) => {
      const id = next++;
      const answers = new Map<Worker, unknown>();
      const timer = setTimeout(() => settle(new Error(`${workers.length - answers.size} of ${workers.length} workers did not answer in time`)), GATHER_TIMEOUT_MS);
      function settle(err?: Error) {
        clearTimeout(timer);
        gatherings.delete(id);
        // A missing worker fails the scrape rather than leaving its counts out: counters that
        // dropped by one worker's share would read as a reset, and rate() as a burst.
        if (err) return reject(err);
        AggregatorRegistry.aggregate([...answers.values()] as object[]).metrics().then(resolve, reject);
      }
      gatherings.set(id, (worker, answer) => {
        if (answer.error !== undefined) return settle(new Error(answer.error));
        answers.set(worker, answer.metrics);
        if (answers.size === workers.length) settle();
      });
      if (workers.length === 0) return settle();
      for (const worker of workers) worker.send({ type: COLLECT, id }, undefined, () => {});
    });
  }
}
