/** Types of the Prometheus text-format parser used by the metrics tests (the package ships none). */
declare module 'parse-prometheus-text-format' {
  /** One sample: counters and gauges carry `value`; an (unlabelled) histogram `buckets` (upper bound → cumulative count), `count` and `sum`. */
  export interface PrometheusSample {
    labels?: Record<string, string>;
    value?: string;
    buckets?: Record<string, string>;
    count?: string;
    sum?: string;
  }
  export interface PrometheusFamily {
    name: string;
    help: string;
    type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
    metrics: PrometheusSample[];
  }
  export default function parsePrometheusTextFormat(text: string): PrometheusFamily[];
}
