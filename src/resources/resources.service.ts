import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/app.config';
import { AppStore, type Resource } from '../store/app.store';

export interface CreateResult {
  created: boolean;
  resource: Resource;
}

/**
 * "Create the resource if the user has none of that name": list, check, create.
 * Duplicate requests arriving together all see "none yet" and all create.
 */
@Injectable()
export class ResourcesService {
  constructor(
    private readonly store: AppStore,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async createIfAbsent(userId: string, name: string): Promise<CreateResult> {
    const existing = (await this.store.listResources(userId)).find((r) => r.name === name);
    if (existing) return { created: false, resource: existing };
    await new Promise((resolve) => setTimeout(resolve, this.config.resourceTaskMs));
    const resource: Resource = { id: randomUUID(), userId, name, createdAt: Date.now() };
    await this.store.addResource(resource);
    return { created: true, resource };
  }

  list(userId: string): Promise<Resource[]> {
    return this.store.listResources(userId);
  }
}
