/**
 * The user's settings of the plugin (schema/plugin.json), followed live. Without a settings
 * registry (or before it answered) the schema's defaults apply.
 */
import type { ISettingRegistry } from '@jupyterlab/settingregistry';
import { Signal, type ISignal } from '@lumino/signaling';

export interface IRecapSettings {
  /** In-page notifications when an agent notebook finished or failed while away. */
  notifications: boolean;
  /** Also the browser's desktop notifications, while the page is hidden. */
  desktopNotifications: boolean;
  /** `(N) ` in front of the page title while N notebooks need the person. */
  titleCount: boolean;
}

export const DEFAULT_SETTINGS: Readonly<IRecapSettings> = {
  notifications: true,
  desktopNotifications: false,
  titleCount: true
};

/** The current settings and a signal when they change. */
export class RecapSettings {
  get current(): Readonly<IRecapSettings> {
    return this._current;
  }

  get changed(): ISignal<this, Readonly<IRecapSettings>> {
    return this._changed;
  }

  /** Follow the registry's values of `pluginId` from now on. */
  async follow(registry: ISettingRegistry, pluginId: string): Promise<void> {
    try {
      const settings = await registry.load(pluginId);
      this._read(settings);
      settings.changed.connect(this._read, this);
    } catch (error) {
      console.warn('jupyter_recap: could not load the settings; using the defaults', error);
    }
  }

  private _read(settings: ISettingRegistry.ISettings): void {
    const composite = settings.composite;
    const flag = (key: keyof IRecapSettings): boolean =>
      typeof composite[key] === 'boolean' ? (composite[key] as boolean) : DEFAULT_SETTINGS[key];
    const next: IRecapSettings = {
      notifications: flag('notifications'),
      desktopNotifications: flag('desktopNotifications'),
      titleCount: flag('titleCount')
    };
    const keys = Object.keys(next) as (keyof IRecapSettings)[];
    if (keys.some(key => next[key] !== this._current[key])) {
      this._current = next;
      this._changed.emit(next);
    }
  }

  private _current: Readonly<IRecapSettings> = { ...DEFAULT_SETTINGS };
  private readonly _changed = new Signal<this, Readonly<IRecapSettings>>(this);
}
