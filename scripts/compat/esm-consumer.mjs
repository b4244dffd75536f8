/**
 * An ES-module NestJS app (as NestJS 12 apps are) importing the built library
 * (CommonJS). Checks what could break across that boundary: named exports seen
 * from ESM, the library and the app sharing one @nestjs/common and @nestjs/core
 * (else the library's exception filter would not apply and the 429 would come
 * back as 500), exclusion.
 * Run by nest-compat.js after `npm run build`; plain JavaScript, so the
 * decorators are applied the way TypeScript's compiled output applies them.
 */
import 'reflect-metadata';
import { Controller, Module, Param, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LockService, Serialized, SerializedModule } from '../../dist/libs/serialized/index.js';

let inside = 0;
let maxInside = 0;
let runs = 0;

class OrdersController {
  async place(id) {
    inside += 1;
    maxInside = Math.max(maxInside, inside);
    await new Promise((resolve) => setTimeout(resolve, 20));
    inside -= 1;
    runs += 1;
    return { id };
  }

  async once(id) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    return { id };
  }
}

function decorateMethod(decorators, name) {
  const descriptor = Object.getOwnPropertyDescriptor(OrdersController.prototype, name);
  Object.defineProperty(OrdersController.prototype, name, Reflect.decorate(decorators, OrdersController.prototype, name, descriptor));
  Param('id')(OrdersController.prototype, name, 0);
}
decorateMethod([Post('place/:id'), Serialized('id'), Reflect.metadata('design:paramtypes', [String])], 'place');
decorateMethod([Post('once/:id'), Serialized('id', { mode: 'reject' }), Reflect.metadata('design:paramtypes', [String])], 'once');
const Controllers = Reflect.decorate([Controller('orders')], OrdersController);
const AppModule = Reflect.decorate(
  [Module({ imports: [SerializedModule.forRoot({ driver: 'memory' })], controllers: [Controllers] })],
  class AppModule {},
);

const app = await NestFactory.create(AppModule, { logger: false });
await app.listen(0, '127.0.0.1');
const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
const placed = await Promise.all(Array.from({ length: 10 }, () => fetch(`${url}/orders/place/o1`, { method: 'POST' })));
const [first, second] = await Promise.all([
  fetch(`${url}/orders/once/o2`, { method: 'POST' }),
  new Promise((resolve) => setTimeout(resolve, 50)).then(() => fetch(`${url}/orders/once/o2`, { method: 'POST' })),
]);
const outcome = {
  placed: placed.map((response) => response.status),
  maxInside,
  runs,
  reject: [first.status, second.status],
  lockService: typeof app.get(LockService).run,
};
await app.close();

console.log(`esm-consumer: ${JSON.stringify(outcome)}`);
const ok =
  outcome.placed.every((status) => status === 201) &&
  maxInside === 1 &&
  runs === 10 &&
  outcome.reject[0] === 201 &&
  outcome.reject[1] === 429 &&
  outcome.lockService === 'function';
if (!ok) {
  console.error('esm-consumer: expected 10×201 one at a time, then 201 and 429 in reject mode');
  process.exit(1);
}
