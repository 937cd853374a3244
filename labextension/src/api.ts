/**
 * Typed requests to jupyter_recap's server extension (docs/focus-protocol.md).
 *
 * Every call goes to `<base url>jupyter-recap/api/…` of the Jupyter server this page came from;
 * there is no other network traffic.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** `GET jupyter-recap/api/capabilities`. */
export interface ICapabilities {
  version: string;
  features: string[];
}

/** The body of `POST jupyter-recap/api/focus`: one notebook's focus in this browser tab. */
export interface IFocusReport {
  kernel_id: string;
  path: string;
  focused: boolean;
  client_id: string;
}

/** The answer to a focus report. */
export interface IFocusAnswer {
  kernel_id: string;
  focused: boolean | null;
  banner_model_id: string | null;
}

/** `GET jupyter-recap/api/kernels/{kernel_id}`. */
export interface IKernelState {
  kernel_id: string;
  focused: boolean | null;
  banner_model_id: string | null;
  execution_state: string;
  idle_seconds: number | null;
}

const API = 'jupyter-recap/api';

/** The server routes the labextension uses. */
export class RecapApi {
  constructor(readonly settings: ServerConnection.ISettings = ServerConnection.makeSettings()) {}

  /** The absolute URL of an API route. */
  url(...parts: string[]): string {
    return URLExt.join(this.settings.baseUrl, API, ...parts);
  }

  capabilities(): Promise<ICapabilities> {
    return this.request<ICapabilities>('GET', 'capabilities');
  }

  focus(report: IFocusReport): Promise<IFocusAnswer> {
    return this.request<IFocusAnswer>('POST', 'focus', report);
  }

  input(kernelId: string, clientId: string): Promise<unknown> {
    return this.request('POST', 'input', { kernel_id: kernelId, client_id: clientId });
  }

  kernel(kernelId: string): Promise<IKernelState> {
    return this.request<IKernelState>('GET', 'kernels', encodeURIComponent(kernelId));
  }

  /**
   * Send a focus report that survives the page going away (tab hidden or closed): a plain
   * `fetch` with `keepalive`, authenticated like `ServerConnection` requests (the `_xsrf`
   * cookie, plus the token when the page has one). Resolves to the answer, or null on any
   * failure: when the page is gone nobody is left to see an error.
   */
  async beacon(report: IFocusReport): Promise<IFocusAnswer | null> {
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    const xsrf = cookie('_xsrf');
    if (xsrf !== undefined) {
      headers['X-XSRFToken'] = xsrf;
    }
    if (this.settings.token) {
      headers['Authorization'] = `token ${this.settings.token}`;
    }
    try {
      const response = await fetch(this.url('focus'), {
        method: 'POST',
        keepalive: true,
        credentials: 'same-origin',
        headers,
        body: JSON.stringify(report)
      });
      return response.ok ? ((await response.json()) as IFocusAnswer) : null;
    } catch {
      return null;
    }
  }

  private async request<T>(method: string, ...route: (string | object)[]): Promise<T> {
    const body = typeof route[route.length - 1] === 'object' ? route.pop() : undefined;
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
    }
    const response = await ServerConnection.makeRequest(
      this.url(...(route as string[])),
      init,
      this.settings
    );
    if (!response.ok) {
      throw await ServerConnection.ResponseError.create(response);
    }
    return (await response.json()) as T;
  }
}

/** The last value of cookie `name` (the one tornado reads when duplicates exist). */
function cookie(name: string): string | undefined {
  let value: string | undefined;
  for (const part of document.cookie.split(';')) {
    const trimmed = part.trim();
    if (trimmed.startsWith(`${name}=`)) {
      value = trimmed.substring(name.length + 1);
    }
  }
  return value;
}
