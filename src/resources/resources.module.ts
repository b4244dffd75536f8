import { Module } from '@nestjs/common';
import { NaiveResourcesController, ResourcesController } from './resources.controller';
import { ResourcesService } from './resources.service';

@Module({
  controllers: [ResourcesController, NaiveResourcesController],
  providers: [ResourcesService],
})
export class ResourcesModule {}
